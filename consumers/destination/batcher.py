"""The elements waiting for a destination's next call, first come first served, and when
the next call is due: as soon as a full batch waits, or once the oldest element has waited
`wait_ms` for others to join it (a few milliseconds: under load a batch fills at once, at
low load an element waits no longer than that).

Each lane has at most one element here (its next version), so a batch never carries two
versions of one posting, and under a rate budget every posting waits its turn in arrival
order: a busy posting cannot starve the others.

Pure: time is passed in (milliseconds).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(eq=False, slots=True)
class _Waiting(Generic[T]):
    element: T
    queued_at: int
    gone: bool = False


class Batcher(Generic[T]):
    def __init__(self, max_batch: int, wait_ms: float) -> None:
        self.max_batch = max_batch
        self.wait_ms = wait_ms
        self._queue: deque[_Waiting[T]] = deque()
        self._by_element: dict[int, _Waiting[T]] = {}

    def __len__(self) -> int:
        return len(self._by_element)

    def __contains__(self, element: T) -> bool:
        return id(element) in self._by_element

    def push(self, element: T, now: int) -> None:
        waiting = _Waiting(element, now)
        self._queue.append(waiting)
        self._by_element[id(element)] = waiting

    def push_front(self, elements: list[T], queued_at: list[int]) -> None:
        """Put a call's elements back at the head, in their order (the call did not happen,
        as far as they are concerned: a 429, the board down)."""
        for element, at in zip(reversed(elements), reversed(queued_at), strict=True):
            waiting = _Waiting(element, at)
            self._queue.appendleft(waiting)
            self._by_element[id(element)] = waiting

    def withdraw(self, element: T) -> bool:
        """Take an element out before it is sent (its lane moved on); False if it is not here."""
        waiting = self._by_element.pop(id(element), None)
        if waiting is None:
            return False
        waiting.gone = True
        return True

    def due_in(self, now: int) -> int | None:
        """Ms until the next call is due (0: now); None when nothing waits."""
        self._drop_gone()
        if not self._queue:
            return None
        if len(self) >= self.max_batch:
            return 0
        return max(0, int(self._queue[0].queued_at + self.wait_ms - now))

    def take(self, count: int) -> list[tuple[T, int]]:
        """The oldest `count` elements (at most `max_batch`), with when each was queued."""
        taken: list[tuple[T, int]] = []
        while self._queue and len(taken) < min(count, self.max_batch):
            waiting = self._queue.popleft()
            if waiting.gone:
                continue
            del self._by_element[id(waiting.element)]
            taken.append((waiting.element, waiting.queued_at))
        return taken

    def waiting(self) -> list[T]:
        return [w.element for w in self._queue if not w.gone]

    def _drop_gone(self) -> None:
        while self._queue and self._queue[0].gone:
            self._queue.popleft()
