"""The read side: each API replica's view of `jobpost.postings`, `jobpost.deliveries` and
`jobpost.delivery-events`, kept in a local store per partition (producer_api.read.log_view
follows the topics), never per posting in memory. A tombstone means "deleted", never
"unknown", and a deleted posting keeps no text. For the timeline, the postings view also
keeps each posting's last versions (op, time, title) and the events view what each of
them came to at each destination, both bounded per posting.
"""

from __future__ import annotations

import json
import struct

from confluent_kafka import Message

from producer_api.read import view_state
from producer_api.read.log_view import LogView, StrongReadTimeout
from producer_api.read.timeline import VersionLine
from producer_api.read.view_state import PostingView, RecentWrites
from runtime import records
from runtime.kafka import KafkaSettings, coordinates
from runtime.stores import Put, StateSettings
from schemas import codec
from schemas.deliveries import DeliveryState
from schemas.enums import JobHeld
from schemas.events import DeliveryEvent
from schemas.model import Destination, Op, PostingUpdate
from schemas.topics import Topics

__all__ = [
    "DeliveriesView",
    "DeliveryEventsView",
    "LogView",
    "PostingView",
    "PostingsView",
    "StrongReadTimeout",
]

KEPT_VERSIONS = 50  # per posting, for the timeline
KEPT_EVENTS = 20  # per posting, destination and version: the newest
_VERSION = struct.Struct(">q")
_HISTORY = b"\x01"  # after a posting's id: its versions (ids never hold a control character)


class PostingsView(LogView):
    """Every posting's newest version; a tombstone means "deleted", never "unknown"."""

    reader = "postings-view"

    def __init__(self, kafka: KafkaSettings, state: StateSettings | None = None) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).postings, state)
        self.recent = RecentWrites()

    def get(self, posting_id: str) -> PostingView | None:
        value = self._stored(posting_id)
        stored = None if value is None else view_state.posting_view(posting_id, value)
        return view_state.newest(stored, self.recent.get(posting_id))

    def deleted_at(self, posting_id: str) -> int | None:
        """The version that deleted the posting, if the view has read its delete (no text
        is decoded)."""
        value = self._stored(posting_id)
        return None if value is None or not view_state.is_deleted(value) else view_state.header(value)[0]

    def observe(self, view: PostingView) -> None:
        """Take a version this replica learnt from a reply (read-your-writes), if newer."""
        value = self._stored(view.id)
        if value is None or view_state.header(value)[0] < view.version:
            self.recent.observe(view)

    def versions(self, posting_id: str) -> list[VersionLine]:
        """The posting's last versions, oldest first."""
        return [_version_line(key, value) for key, value in self._scan(posting_id, _HISTORY)]

    def apply(self, message: Message) -> list[Put]:
        posting_id, update = records.posting_update(message)
        puts = self._changes(message, posting_id, update)
        if update is None or update.op == Op.DELETED:  # the text it held goes from disk too
            self.erase(coordinates(message)[1], (key for key, _ in puts))
        return puts

    def _changes(self, message: Message, posting_id: str, update: PostingUpdate | None) -> list[Put]:
        key = posting_id.encode()
        value = self._current(coordinates(message)[1], key)
        if update is not None:
            self.recent.applied(posting_id, update.version)
            history = _history(key, update)
            if update.op == Op.DELETED:
                history += self._untitled(coordinates(message)[1], key, update.version)
            if value is not None and view_state.header(value)[0] >= update.version:
                return history  # an older version than the one the view has
            return [(key, view_state.updated(update, message.value() or b"")), *history]
        version, millis = view_state.header(value) if value is not None else (-1, None)
        employer = view_state.employer(value) if value is not None else None
        observed = self.recent.get(posting_id)
        if observed is not None and observed.version > version:
            version, millis = observed.version, observed.last_update_time_millis
            employer = employer or observed.employer
        self.recent.applied(posting_id, version)
        return [(key, view_state.deleted(version, millis, employer))]

    def _untitled(self, partition: int, key: bytes, deleted: int) -> list[Put]:
        """The lines of the versions before a delete, without their titles: a deleted
        posting keeps no text, in its timeline either."""
        puts: list[Put] = []
        for version in range(max(0, deleted - KEPT_VERSIONS + 1), deleted):
            line_key = key + _HISTORY + _VERSION.pack(version)
            value = self._current(partition, line_key)
            if value is not None:
                line = json.loads(value)
                if line["title"]:
                    puts.append((line_key, json.dumps({**line, "title": ""}).encode()))
        return puts


class DeliveriesView(LogView):
    """Each posting's progress at each destination, from `jobpost.deliveries`, which
    keeps a posting's states on its partition number."""

    reader = "deliveries-view"
    gathered = True  # no answer waits on it: a read of progress takes what it has

    def __init__(self, kafka: KafkaSettings, state: StateSettings | None = None) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).deliveries, state)

    def get(self, posting_id: str) -> dict[Destination, DeliveryState]:
        states = {}
        for destination in Destination:
            value = self._stored(posting_id, _at(destination))
            if value is not None:
                states[destination] = codec.delivery_states().decode(value)
        return states

    def apply(self, message: Message) -> list[Put]:
        destination, posting_id, state = records.delivery_state(message)
        key = posting_id.encode() + _at(destination)
        if state is None or state.held == JobHeld.CLOSED:
            self.erase(coordinates(message)[1], [key])  # the content a board restated goes from disk
        return [(key, None if state is None else message.value())]


class DeliveryEventsView(LogView):
    """What each of a posting's versions came to at each destination, from
    `jobpost.delivery-events`: the newest events of each (destination, version)."""

    reader = "delivery-events-view"
    gathered = True

    def __init__(self, kafka: KafkaSettings, state: StateSettings | None = None) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).delivery_events, state)

    def get(self, posting_id: str) -> list[DeliveryEvent]:
        """The posting's events, in the order they happened."""
        found = [e for _, value in self._scan(posting_id, b"\x00") for e in _events(value)]
        return sorted(found, key=lambda e: (e.at, e.version))

    def apply(self, message: Message) -> list[Put]:
        event = records.delivery_event(message)
        key = _event_key(event.posting_id, event.destination, event.version)
        current = self._current(coordinates(message)[1], key)
        events = [*(_events(current) if current else []), event][-KEPT_EVENTS:]
        puts: list[Put] = [(key, json.dumps([e.to_avro() for e in events]).encode())]
        if current is None and event.version >= KEPT_VERSIONS:
            puts.append(
                (_event_key(event.posting_id, event.destination, event.version - KEPT_VERSIONS), None)
            )
        return puts


def _history(key: bytes, update: PostingUpdate) -> list[Put]:
    """The version's line in the posting's history, and the oldest line dropped."""
    # A DELETED record carries no text (records before the erasure did); the line keeps none.
    title = "" if update.op == Op.DELETED else update.posting.title
    line = {"op": update.op.value, "at": update.last_update_time_millis, "title": title}
    puts: list[Put] = [(key + _HISTORY + _VERSION.pack(update.version), json.dumps(line).encode())]
    if update.version >= KEPT_VERSIONS:
        puts.append((key + _HISTORY + _VERSION.pack(update.version - KEPT_VERSIONS), None))
    return puts


def _version_line(key: bytes, value: bytes) -> VersionLine:
    line = json.loads(value)
    version = _VERSION.unpack_from(key, len(key) - _VERSION.size)[0]
    return VersionLine(version, Op(line["op"]), line["at"], line["title"])


def _event_key(posting_id: str, destination: Destination, version: int) -> bytes:
    return posting_id.encode() + _at(destination) + b"\x00" + _VERSION.pack(version)


def _events(value: bytes) -> list[DeliveryEvent]:
    return [DeliveryEvent.from_avro(e) for e in json.loads(value)]


def _at(destination: Destination) -> bytes:
    return b"\x00" + destination.value.encode()
