"""The sandbox's clock: real time, moved forward on request (`PUT /_sandbox/clock`), so a
test sees in seconds what the boards do in days: LinkedIn's 180-day job lifetime and its
daily caps (reset "at midnight UTC every day": learn.microsoft.com/linkedin/shared/api-guide/
concepts/rate-limits), Indeed's indexing delay and its 30-day reactivation window.

Everything the sandbox times runs on it (token lifetimes, budgets, tasks, listings), so a
clock moved forward ends tokens and tasks as the same wait would. It never goes back while
the sandbox runs; a reset (`DELETE /_sandbox`) puts it back on real time."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from datetime import UTC, datetime

DAY_S = 86_400


class Clock:
    """Monotonic seconds for windows, lifetimes and delays; epoch milliseconds for what the
    boards report and what dates a job. Both move by `advanced_s`."""

    def __init__(
        self,
        now: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self._now = now
        self._wall_ms = wall_ms
        self.advanced_s = 0.0

    def now(self) -> float:
        return self._now() + self.advanced_s

    def wall_ms(self) -> int:
        return self._wall_ms() + round(self.advanced_s * 1000)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the sandbox's clock never goes back")
        self.advanced_s += seconds

    def reset(self) -> None:
        self.advanced_s = 0.0

    def day(self) -> int:
        """Which UTC day it is (days since the epoch): daily caps count within one."""
        return self.wall_ms() // (DAY_S * 1000)

    def until_next_day_s(self) -> int:
        """Whole seconds until the next 00:00 UTC, at least 1: a daily cap's Retry-After."""
        left_ms = (self.day() + 1) * DAY_S * 1000 - self.wall_ms()
        return max(1, math.ceil(left_ms / 1000))

    def to_json(self) -> dict[str, object]:
        wall_ms = self.wall_ms()
        at = datetime.fromtimestamp(wall_ms / 1000, UTC).isoformat(timespec="milliseconds")
        return {"now": wall_ms, "iso": at.replace("+00:00", "Z"), "advanced_s": self.advanced_s}
