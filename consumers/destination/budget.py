"""A destination's rate budget: records and requests per minute over a rolling window,
never exceeded, and the rate a board that publishes none (Indeed) will take, found by
trying.

The configured budget is the whole consumer group's; each member takes the share of the
partitions it owns (owned / total), so the members' shares never sum above it. A `429`
pauses every lane of the destination for its `Retry-After` and lowers the rate the budget
resumes at to a fraction of what the window held (multiplicative decrease); while calls
wait for the rate and the board takes what is sent, the rate rises by a small step every
few seconds (additive increase), up to the configured budget. That
is TCP's AIMD: it finds a limit nobody published, and it backs off at once when it finds
one.

Pure: time is passed in (epoch or monotonic milliseconds, as long as it is one clock), so
it is unit-tested in milliseconds.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

WINDOW_MS = 60_000
# A call reaches the board a little after we count it (latency, clocks that disagree): a
# window one second longer than the board's keeps any 60 s of its log within the budget.
MARGIN_MS = 1_000
DECREASE = 0.7  # after a 429: this share of what the window held
# ... but never below a call (and a record) a second: a 429 after a handful of calls says
# more about other clients of the same budget (or one posting) than about its size.
FLOOR_PER_MINUTE = 60.0
RAISE_EVERY_MS = 10_000
RAISE_STEP = 0.05  # of the configured rate (or of the found one, when none is configured)
FIRST_PAUSE_MS = 1_000  # a 429 without Retry-After: 1 s, doubling, at most a minute
MAX_PAUSE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Rate:
    """One kind of budget: the configured rate for the group, and what was found."""

    configured: float | None  # per minute, for the whole group; None: none published
    found: float | None = None  # per minute for this member, after a 429; None: not limited yet


class RateBudget:
    def __init__(
        self,
        records_per_minute: float | None,
        requests_per_minute: float | None,
        *,
        window_ms: int = WINDOW_MS + MARGIN_MS,
    ) -> None:
        self.window_ms = window_ms
        self.records = Rate(records_per_minute)
        self.requests = Rate(requests_per_minute)
        self.share = 1.0
        self.paused_until = 0
        self._calls: deque[list[int]] = deque()  # [when, records] of each call in the window
        self._in_window = 0  # records of those calls
        self._throttles_in_a_row = 0
        self._changed_at = 0
        self._limited = False  # a call waited for the rate since the last change

    def set_share(self, owned: int, total: int) -> None:
        """This member owns `owned` of the group's `total` partitions."""
        self.share = owned / total if total > 0 else 0.0

    def allowed(self, rate: Rate) -> float | None:
        """Per minute, for this member, now; None: unlimited."""
        own = None if rate.configured is None else rate.configured * self.share
        if rate.found is None:
            return own
        return rate.found if own is None else min(own, rate.found)

    def admits(self, now: int) -> int:
        """How many records one call may carry now (0: none, wait `wait_ms`)."""
        self._expire(now)
        if now < self.paused_until or self._left(self.requests, len(self._calls)) < 1:
            return 0
        return max(0, self._left(self.records, self._in_window))

    def wait_ms(self, now: int, records: int = 1) -> int:
        """How long until a call of `records` records is admitted (0: now)."""
        self._expire(now)
        wait = max(0, self.paused_until - now)
        records_cap = self._cap(self.records)
        if records_cap is not None:
            wait = max(
                wait, self._until_room(now, records_cap, min(records, int(records_cap)), by_records=True)
            )
        requests_cap = self._cap(self.requests)
        if requests_cap is not None:
            wait = max(wait, self._until_room(now, requests_cap, 1, by_records=False))
        if wait > max(0, self.paused_until - now):
            self._limited = True  # the rate, not a 429's pause, holds a call back
        return wait

    def spend(self, now: int, records: int) -> list[int]:
        """A call of `records` records is made now; the handle `throttled` takes."""
        call = [now, records]
        self._calls.append(call)
        self._in_window += records
        return call

    def throttled(self, now: int, retry_after_s: float | None, call: list[int] | None = None) -> int:
        """The board answered 429 (to `call`): pause (the board's Retry-After, else our own
        backoff), and resume at a fraction of what the window held. The refused call's
        records were not admitted (its request still counts): the lower rate is a share of
        what the board took, not of what every call still in flight when it filled up asked
        for. Returns the pause in ms."""
        self._expire(now)
        if call is not None and any(c is call for c in self._calls):
            self._in_window -= call[1]
            call[1] = 0
        if retry_after_s is not None:
            pause = int(retry_after_s * 1000)
        else:
            pause = min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2**self._throttles_in_a_row)
        self._throttles_in_a_row += 1
        self.paused_until = max(self.paused_until, now + pause)
        self.records = Rate(self.records.configured, self._lowered(self._in_window))
        self.requests = Rate(self.requests.configured, self._lowered(len(self._calls)))
        self._changed_at = now
        return pause

    def answered(self, now: int) -> None:
        """The board took a call: raise a found rate a step, now and then, while calls wait
        for it (an idle destination learns nothing about what the board would take)."""
        self._throttles_in_a_row = 0
        if now - self._changed_at < RAISE_EVERY_MS or not self._limited:
            return
        self.records = self._raised(self.records)
        self.requests = self._raised(self.requests)
        self._changed_at = now
        self._limited = False

    def _lowered(self, used: int) -> float:
        return max(FLOOR_PER_MINUTE, self._per_minute(used) * DECREASE)

    def _raised(self, rate: Rate) -> Rate:
        if rate.found is None:
            return rate
        step = RAISE_STEP * (rate.configured * self.share if rate.configured is not None else rate.found)
        raised = rate.found + max(1.0, step)
        own = None if rate.configured is None else rate.configured * self.share
        return Rate(rate.configured, None if own is not None and raised >= own else raised)

    def _cap(self, rate: Rate) -> float | None:
        """What the window may hold (a floor of one call's worth, so a small share still moves)."""
        allowed = self.allowed(rate)
        return None if allowed is None else max(1.0, allowed)

    def _left(self, rate: Rate, used: int) -> int:
        cap = self._cap(rate)
        return 1 << 30 if cap is None else math.floor(cap) - used

    def _per_minute(self, count: int) -> float:
        return count * WINDOW_MS / self.window_ms

    def _until_room(self, now: int, cap: float, wanted: int, *, by_records: bool) -> int:
        """Ms until the window has room for `wanted` more (records, or calls)."""
        used = self._in_window if by_records else len(self._calls)
        excess = used + wanted - math.floor(cap)
        if excess <= 0:
            return 0
        for when, records in self._calls:  # oldest first: each call leaves the window in turn
            excess -= records if by_records else 1
            if excess <= 0:
                return max(0, when + self.window_ms - now + 1)
        return self.window_ms

    def _expire(self, now: int) -> None:
        while self._calls and self._calls[0][0] <= now - self.window_ms:
            _, records = self._calls.popleft()
            self._in_window -= records
