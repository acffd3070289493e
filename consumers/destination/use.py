"""What a destination's calls used within the last minute, counted beside the rate budget
(`budget.py`), whose internals are its own: the use `GET /ops/boards` shows.

Pure: time is passed in (milliseconds).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(slots=True)
class _Call:
    at: int
    records: int
    call: object


class UseMeter:
    """Records and requests of the calls started within the last `window_ms`; a call the
    board refused with a 429 keeps its request but gives its records back (the board took
    none), as the rate budget counts it."""

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self._calls: deque[_Call] = deque()

    def spent(self, now: int, records: int, call: object) -> None:
        """A call of `records` records started now; `call` names it to `refused`."""
        self._calls.append(_Call(now, records, call))

    def refused(self, call: object) -> None:
        for counted in self._calls:
            if counted.call is call:
                counted.records = 0

    def used(self, now: int) -> tuple[int, int]:
        """(records, requests) within the window ending now."""
        while self._calls and self._calls[0].at <= now - self.window_ms:
            self._calls.popleft()
        return sum(counted.records for counted in self._calls), len(self._calls)
