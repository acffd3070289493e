"""Which offset of a partition may be committed: the first one not yet finished.

The same rule as the board consumers' (`consumers.offsets`), kept here so neither
deployable imports the other."""

from __future__ import annotations

import heapq


class OffsetTracker:
    """Records are added in offset order and finish in any order; `committable()` is the
    offset after the longest finished prefix, so a commit never skips unfinished work."""

    def __init__(self) -> None:
        self._pending: list[int] = []
        self._finished: set[int] = set()
        self._next = -1

    def add(self, offset: int) -> None:
        heapq.heappush(self._pending, offset)
        self._next = max(self._next, offset + 1)

    def finish(self, offset: int) -> None:
        self._finished.add(offset)
        while self._pending and self._pending[0] in self._finished:
            self._finished.discard(heapq.heappop(self._pending))

    def committable(self) -> int | None:
        if self._next < 0:
            return None
        return self._pending[0] if self._pending else self._next

    def __len__(self) -> int:
        return len(self._pending)
