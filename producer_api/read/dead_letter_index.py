"""An index of a board's dead letters, for the operations panel: each letter's posting,
version, op, error, attempts and time (no posting text), the newest `KEPT` per partition.

It follows `jobpost.<board>.dlq` into a local store per partition (producer_api.read.log_view),
so listing the letters reads at most `KEPT` small entries per partition however long the
topic is, and a restart reads only the letters written since. A posting's letters share a
partition (the topic is keyed by posting id), so the newest letter of each posting version
replaces the older ones there (a version redriven and refused again has two).

Keys: `o` + offset → the letter; `v` + posting id + NUL + version → the offset of its newest
letter.
"""

from __future__ import annotations

import bisect
import json
import struct
from dataclasses import dataclass

from confluent_kafka import Consumer, Message

from producer_api.read.log_view import LogView
from runtime import records
from runtime.kafka import KafkaSettings, coordinates
from runtime.stores import Put, StateSettings
from schemas.dead_letters import DeadLetterHeaders
from schemas.enums import Destination
from schemas.topics import Component, Topics

KEPT = 500  # newest letters per partition (a list shows the newest 500 of the board)
_OFFSET = struct.Struct(">q")
_LETTER = b"o"
_VERSION = b"v"


@dataclass(frozen=True)
class IndexedLetter:
    partition: int
    offset: int
    posting_id: str | None  # None: the letter cannot be decoded
    version: int | None
    op: str | None
    error: str
    attempts: int
    at: int | None  # when the last attempt before it was made (ms)

    def to_json(self) -> bytes:
        fields = [self.posting_id, self.version, self.op, self.error, self.attempts, self.at]
        return json.dumps(fields).encode()

    @classmethod
    def from_json(cls, partition: int, offset: int, value: bytes) -> IndexedLetter:
        posting_id, version, op, error, attempts, at = json.loads(value)
        return cls(partition, offset, posting_id, version, op, error, attempts, at)


class DeadLettersView(LogView):
    """One board's dead letters, indexed (the newest KEPT per partition)."""

    def __init__(self, kafka: KafkaSettings, board: Destination, state: StateSettings | None = None) -> None:
        self.reader = f"dead-letters-{board.value}"
        super().__init__(kafka, Topics(kafka.topic_prefix).dlq(Component(board.value)), state)
        self._kept: dict[int, list[int]] = {}  # partition -> offsets in its store, ascending

    def newest(self) -> list[IndexedLetter]:
        """Every indexed letter, newest first."""
        found: list[IndexedLetter] = []
        with self._lock:
            for partition, store in list(self.stores.open.items()):
                for key, value in store.items(_LETTER):
                    offset = _OFFSET.unpack_from(key, 1)[0]
                    found.append(IndexedLetter.from_json(partition, offset, value))
        return sorted(found, key=lambda letter: (letter.at or 0, letter.offset), reverse=True)

    def apply(self, message: Message) -> list[Put]:
        _, partition, offset = coordinates(message)
        letter = _indexed(message, partition, offset)
        kept = self._offsets(partition)
        puts: list[Put] = [(_LETTER + _OFFSET.pack(offset), letter.to_json())]
        if letter.posting_id is not None and letter.version is not None:
            version_key = _version_key(letter.posting_id, letter.version)
            older = self._current(partition, version_key)
            if older is not None:  # the version's earlier letter: this one replaces it
                older_offset = _OFFSET.unpack(older)[0]
                puts.append((_LETTER + older, None))
                _discard(kept, older_offset)
            puts.append((version_key, _OFFSET.pack(offset)))
        bisect.insort(kept, offset)
        while len(kept) > KEPT:
            puts += self._evicted(partition, kept.pop(0))
        return puts

    def _evicted(self, partition: int, offset: int) -> list[Put]:
        """The puts that forget the letter at `offset`."""
        key = _LETTER + _OFFSET.pack(offset)
        value = self._current(partition, key)
        puts: list[Put] = [(key, None)]
        if value is not None:
            letter = IndexedLetter.from_json(partition, offset, value)
            if letter.posting_id is not None and letter.version is not None:
                version_key = _version_key(letter.posting_id, letter.version)
                if self._current(partition, version_key) == _OFFSET.pack(offset):
                    puts.append((version_key, None))
        return puts

    def _offsets(self, partition: int) -> list[int]:
        """The offsets the partition's store holds (read from it once, then kept up to date)."""
        kept = self._kept.get(partition)
        if kept is None:
            store = self.stores.open.get(partition)
            entries = [] if store is None else store.items(_LETTER)
            kept = self._kept[partition] = sorted(_OFFSET.unpack_from(key, 1)[0] for key, _ in entries)
        return kept

    def _open_stores(self, consumer: Consumer, partitions: list[int]) -> None:
        self._kept.clear()  # stores opened (or rebuilt) again: read their offsets again
        super()._open_stores(consumer, partitions)


def _indexed(message: Message, partition: int, offset: int) -> IndexedLetter:
    headers = DeadLetterHeaders.parse(message.headers())
    try:
        _, update = records.posting_update(message)
    except records.PoisonRecord:
        update = None
    if update is None:
        return IndexedLetter(
            partition, offset, None, None, None, headers.error, headers.attempts, headers.last_attempt_ms
        )
    return IndexedLetter(
        partition,
        offset,
        update.posting_id,
        update.version,
        update.op.value,
        headers.error,
        headers.attempts,
        headers.last_attempt_ms,
    )


def _version_key(posting_id: str, version: int) -> bytes:
    return _VERSION + posting_id.encode() + b"\x00" + _OFFSET.pack(version)


def _discard(kept: list[int], offset: int) -> None:
    at = bisect.bisect_left(kept, offset)
    if at < len(kept) and kept[at] == offset:
        del kept[at]
