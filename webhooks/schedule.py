"""When a failed delivery is attempted again: the Standard Webhooks schedule (every wait a
setting), moved by a little jitter so a dead endpoint's deliveries do not all come back at
once, and never sooner than the endpoint's Retry-After asked."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence


class RetrySchedule:
    def __init__(
        self,
        waits_s: Sequence[float],
        jitter: float = 0.0,
        retry_after_max_s: float = 86400.0,
        uniform: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.waits_s = tuple(waits_s)
        self.jitter = jitter
        self.retry_after_max_s = retry_after_max_s
        self._uniform = uniform

    @property
    def attempts(self) -> int:
        """Attempts in all: the first, then one after each wait."""
        return len(self.waits_s) + 1

    def wait_s(self, attempts_made: int, retry_after_s: float | None = None) -> float | None:
        """How long after the `attempts_made`-th failed attempt the next one is due; None
        once the schedule is spent (the event goes to the dead letters)."""
        if attempts_made < 1 or attempts_made > len(self.waits_s):
            return None
        wait = self.waits_s[attempts_made - 1]
        if self.jitter:
            wait *= 1 + self._uniform(-self.jitter, self.jitter)
        if retry_after_s is not None and retry_after_s > 0:
            wait = max(wait, min(retry_after_s, self.retry_after_max_s))
        return wait
