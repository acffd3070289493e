"""The read side: each API replica's view of `jobpost.postings` and `jobpost.deliveries`,
kept in a local store per partition (producer_api.log_view follows the topics), never per
posting in memory. A tombstone means "deleted", never "unknown", and a deleted posting
keeps no text.
"""

from __future__ import annotations

from confluent_kafka import Message

from producer_api import view_state
from producer_api.log_view import LogView, StrongReadTimeout
from producer_api.view_state import PostingView, RecentWrites
from schemas import codec, records
from schemas.kafka import KafkaSettings, coordinates
from schemas.model import DeliveryState, Destination
from schemas.stores import Put, StateSettings
from schemas.topics import Topics

__all__ = ["DeliveriesView", "LogView", "PostingView", "PostingsView", "StrongReadTimeout"]


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

    def observe(self, view: PostingView) -> None:
        """Take a version this replica learnt from a reply (read-your-writes), if newer."""
        value = self._stored(view.id)
        if value is None or view_state.header(value)[0] < view.version:
            self.recent.observe(view)

    def apply(self, message: Message) -> list[Put]:
        posting_id, update = records.posting_update(message)
        key = posting_id.encode()
        value = self._current(coordinates(message)[1], key)
        if update is not None:
            self.recent.applied(posting_id, update.version)
            if value is not None and view_state.header(value)[0] >= update.version:
                return []  # an older version than the one the view has
            return [(key, view_state.updated(update, message.value() or b""))]
        version, millis = view_state.header(value) if value is not None else (-1, None)
        observed = self.recent.get(posting_id)
        if observed is not None and observed.version > version:
            version, millis = observed.version, observed.last_update_time_millis
        self.recent.applied(posting_id, version)
        return [(key, view_state.deleted(version, millis))]


class DeliveriesView(LogView):
    """Each posting's progress at each destination, from `jobpost.deliveries`, which
    keeps a posting's states on its partition number."""

    reader = "deliveries-view"

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
        return [(posting_id.encode() + _at(destination), None if state is None else message.value())]


def _at(destination: Destination) -> bytes:
    return b"\x00" + destination.value.encode()
