"""Which offset of a partition may be committed: the first one not yet finished."""

from __future__ import annotations

import heapq


class OffsetTracker:
    """Records are added in offset order and finish in any order; `committable()` is the
    offset after the longest finished prefix, so a commit never skips unfinished work."""

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
