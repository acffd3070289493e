"""Which offsets a consumer may commit: for each partition it reads, the offset after the
longest prefix of records that are finished. Records are taken in offset order and finish
in any order (key-ordered concurrency finishes a later record of one posting before an
earlier one of another), so a commit never skips unfinished work, and a restart reads again
only what was not finished.

Pure: no Kafka client is asked; the consume loop (`runtime.consume_loop`) feeds it and
commits what it says.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from confluent_kafka import TopicPartition


class OffsetTracker:
    """One partition's records: `committable()` is the offset after the longest finished
    prefix."""

    def __init__(self) -> None:
        self._pending: list[int] = []  # min-heap of offsets not finished
        self._finished: set[int] = set()
        self._timestamps: dict[int, int] = {}  # offset -> when Kafka took it (ms), while unfinished
        self._next = -1  # offset after the highest added

    def add(self, offset: int, timestamp_ms: int | None = None) -> None:
        heapq.heappush(self._pending, offset)
        self._next = max(self._next, offset + 1)
        if timestamp_ms is not None and timestamp_ms > 0:
            self._timestamps[offset] = timestamp_ms

    def finish(self, offset: int) -> None:
        self._finished.add(offset)
        self._timestamps.pop(offset, None)
        while self._pending and self._pending[0] in self._finished:
            self._finished.discard(heapq.heappop(self._pending))

    def committable(self) -> int | None:
        """The offset to commit (None before any record was added)."""
        if self._next < 0:
            return None
        return self._pending[0] if self._pending else self._next

    def oldest_timestamp(self) -> int | None:
        """When Kafka took the oldest record not finished (ms); None when all are."""
        return min(self._timestamps.values()) if self._timestamps else None

    def __len__(self) -> int:
        return len(self._pending)


class Checkpoint:
    """The trackers of every partition (of every topic) a consumer reads now. A partition is
    `opened` when its records start to be read and `dropped` when it is given up; a record
    of a partition not open is not tracked (`track` says None) and its work is not done."""

    def __init__(self) -> None:
        self._trackers: dict[tuple[str, int], OffsetTracker] = {}

    def open(self, topics: Iterable[str], partition: int) -> None:
        for topic in topics:
            self._trackers[(topic, partition)] = OffsetTracker()

    def drop(self, partitions: set[int]) -> None:
        for key in [key for key in self._trackers if key[1] in partitions]:
            del self._trackers[key]

    def track(
        self, topic: str, partition: int, offset: int, timestamp_ms: int | None = None
    ) -> OffsetTracker | None:
        """A record taken: the tracker to finish it in (a partition given up and opened
        again has a new one). None when its partition is not open (given up meanwhile: its
        next owner reads it again)."""
        tracker = self._trackers.get((topic, partition))
        if tracker is not None:
            tracker.add(offset, timestamp_ms)
        return tracker

    def committable(self, partitions: set[int] | None = None) -> list[TopicPartition]:
        """The offset to commit of each open partition (of `partitions`, when given)."""
        offsets = []
        for (topic, partition), tracker in self._trackers.items():
            if partitions is not None and partition not in partitions:
                continue
            offset = tracker.committable()
            if offset is not None:
                offsets.append(TopicPartition(topic, partition, offset))
        return offsets

    def unfinished(self) -> int:
        """Records taken whose offsets cannot be committed yet (not finished, or behind one
        that is not), over every partition."""
        return sum(len(tracker) for tracker in self._trackers.values())

    def oldest_timestamp(self, topic: str) -> int | None:
        """When Kafka took the oldest unfinished record of the topic (ms); None when none."""
        oldest = [t.oldest_timestamp() for (name, _), t in self._trackers.items() if name == topic]
        known = [timestamp for timestamp in oldest if timestamp is not None]
        return min(known) if known else None
