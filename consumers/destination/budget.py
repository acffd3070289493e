"""A destination's rate budget: records and requests per minute over a rolling window,
never exceeded, and the rate a board that publishes none (Indeed) will take, found by
trying.

The configured budget is the whole consumer group's; each member takes the share of the
partitions it owns (owned / total), so the members' shares never sum above it.

A board that publishes no budget is found as congestion control finds a link's capacity:

- **Slow start.** With no rate known, the window may hold 100 of each at first, doubling
  every second from the first call into an empty window: the first 429 refuses a call or
  two, not every call in flight.
- **Decrease.** A `429` pauses every lane for its `Retry-After` (our own doubling backoff
  without one). What the window held that the board took is the rate that drew it: the
  budget's ceiling estimate (a board with a rolling window refuses when it holds its
  budget), of records or of requests, whichever the window filled. The rate resumes just
  under it (98 %): a multiplicative decrease, but never below what the window shows the
  board allowed, and never by more than half at once (a window that held little says more
  about other clients of the same budget than about its size: no ceiling is taken from
  fewer than 60).
- **Increase.** While calls wait for the rate and the board takes what is sent, every
  10 s the rate climbs quickly (half the gap) back to just under the ceiling, then probes
  above it slowly (0.25 % of it a step); a ceiling no 429 confirmed for 5 minutes is
  forgotten and the rate grows 10 % a step, so a raised budget is found. Never past a
  configured budget.
- **Pacing.** A found rate is also paced (at most 10 s of it at once): a probe that finds
  the ceiling is refused a call, not a burst of them.

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
UNDER = 0.98  # after a 429: this share of what the window held (the ceiling)
MOST_TAKEN = 0.5  # ... but at least this share of the rate before it
FILLED = 0.5  # a 429 lowers the kinds whose window held at least this share of what it may
# ... and never below a call (and a record) a second.
FLOOR_PER_MINUTE = 60.0
RAISE_EVERY_MS = 10_000
PROBE_STEP = 0.0025  # of the ceiling, while one is remembered
FORGET_MS = 300_000  # a ceiling no 429 confirmed for this long is forgotten
GROW_STEP = 0.1  # of the found rate, with no ceiling remembered
SLOW_START = 100.0  # what the window may hold at first with no rate known, doubling...
DOUBLE_MS = 1_000  # ... this often
MOST_DOUBLINGS = 40
PACE_BURST_MS = 10_000  # a found rate paced: at most this much of it at once
FIRST_PAUSE_MS = 1_000  # a 429 without Retry-After: 1 s, doubling, at most a minute
MAX_PAUSE_MS = 60_000


@dataclass(frozen=True, slots=True)
class Rate:
    """One kind of budget: the configured rate for the group, what was found, and the
    ceiling the last 429 showed."""

    configured: float | None  # per minute, for the whole group; None: none published
    found: float | None = None  # per minute for this member, after a 429; None: not limited yet
    ceiling: float | None = None  # what the window held at the last 429 that told one
    ceiling_at: int = 0  # when


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
        # [when, records, refused] of each call in the window.
        self._calls: deque[list[int]] = deque()
        self._in_window = 0  # records of those calls the board took (or may yet)
        self._refused = 0  # those calls refused with a 429
        self._throttles_in_a_row = 0
        self._changed_at = 0
        self._limited = False  # a call waited for the rate since the last change
        self._slow_from: int | None = None  # the slow start's first call
        self._paced_at = 0  # when the next call may start at a found rate (less the burst)

    def set_share(self, owned: int, total: int) -> None:
        """This member owns `owned` of the group's `total` partitions."""
        self.share = owned / total if total > 0 else 0.0

    def allowed(self, rate: Rate) -> float | None:
        """Per minute, for this member, now; None: unlimited."""
        own = self._own(rate)
        if rate.found is None:
            return own
        return rate.found if own is None else min(own, rate.found)

    def admits(self, now: int) -> int:
        """How many records one call may carry now (0: none, wait `wait_ms`)."""
        self._expire(now)
        if now < max(self.paused_until, self._paced_at) or self._left(self.requests, now, calls=True) < 1:
            return 0
        return max(0, self._left(self.records, now, calls=False))

    def wait_ms(self, now: int, records: int = 1) -> int:
        """How long until a call of `records` records is admitted (0: now)."""
        self._expire(now)
        paused = max(0, self.paused_until - now)
        wait = max(
            paused,
            self._paced_at - now,
            self._until_room(now, self.records, records, calls=False),
            self._until_room(now, self.requests, 1, calls=True),
        )
        if wait > paused:
            self._limited = True  # the rate, not a 429's pause, holds a call back
        return wait

    def spend(self, now: int, records: int) -> list[int]:
        """A call of `records` records is made now; the handle `throttled` takes."""
        self._expire(now)
        if not self._calls:
            self._slow_from = now  # an idle board starts slow again
        call = [now, records, 0]
        self._calls.append(call)
        self._in_window += records
        self._paced_at = max(self._paced_at, now - PACE_BURST_MS) + self._pace_ms(records)
        return call

    def throttled(self, now: int, retry_after_s: float | None, call: list[int] | None = None) -> int:
        """The board answered 429 (to `call`): pause (the board's Retry-After, else our own
        backoff), and resume just under what the window held. The refused call's records
        were not admitted (its request was not either): the ceiling is what the board took,
        not what every call still in flight when it filled up asked for. Returns the pause
        in ms."""
        self._expire(now)
        if call is not None and not call[2] and any(c is call for c in self._calls):
            self._in_window -= call[1]
            call[1], call[2] = 0, 1
            self._refused += 1
        if retry_after_s is not None:
            pause = int(retry_after_s * 1000)
        else:
            pause = min(MAX_PAUSE_MS, FIRST_PAUSE_MS * 2**self._throttles_in_a_row)
        self._throttles_in_a_row += 1
        self.paused_until = max(self.paused_until, now + pause)
        self._paced_at = max(self._paced_at, self.paused_until)  # no burst saved up while paused
        # The board does not say which budget it refused for: the one the window filled (both,
        # when neither did).
        kinds = ((self.records, self._in_window), (self.requests, len(self._calls) - self._refused))
        filled = [used >= FILLED * self._cap(rate, now) for rate, used in kinds]
        self.records, self.requests = (
            self._lowered(rate, used, now) if full or not any(filled) else rate
            for (rate, used), full in zip(kinds, filled, strict=True)
        )
        self._changed_at = now
        return pause

    def answered(self, now: int) -> None:
        """The board took a call: raise a found rate a step, now and then, while calls wait
        for it (an idle destination learns nothing about what the board would take)."""
        self._throttles_in_a_row = 0
        if now - self._changed_at < RAISE_EVERY_MS or not self._limited:
            return
        self.records = self._raised(self.records, now)
        self.requests = self._raised(self.requests, now)
        self._changed_at = now
        self._limited = False

    def _own(self, rate: Rate) -> float | None:
        return None if rate.configured is None else rate.configured * self.share

    def _lowered(self, rate: Rate, taken: int, now: int) -> Rate:
        before = self.allowed(rate)
        lowered = UNDER * taken
        if before is not None:
            lowered = min(before, max(lowered, MOST_TAKEN * before))
        if taken >= FLOOR_PER_MINUTE:
            return Rate(rate.configured, max(FLOOR_PER_MINUTE, lowered), float(taken), now)
        return Rate(rate.configured, max(FLOOR_PER_MINUTE, lowered), rate.ceiling, rate.ceiling_at)

    def _raised(self, rate: Rate, now: int) -> Rate:
        if rate.found is None:
            return rate
        if rate.ceiling is not None and now - rate.ceiling_at < FORGET_MS:
            probe = PROBE_STEP * rate.ceiling
            raised = rate.found + max(1.0, probe, (UNDER * rate.ceiling - rate.found) / 2)
            ceiling, ceiling_at = rate.ceiling, rate.ceiling_at
        else:
            raised, ceiling, ceiling_at = rate.found + max(1.0, GROW_STEP * rate.found), None, 0
        own = self._own(rate)
        if own is not None and raised >= own:
            return Rate(rate.configured)
        return Rate(rate.configured, raised, ceiling, ceiling_at)

    def _cap(self, rate: Rate, now: int) -> float:
        """What the window may hold now (a floor of one call's worth, so a small share still
        moves; the slow start's, with no rate known)."""
        allowed = self.allowed(rate)
        if allowed is None:
            doublings = 0.0 if self._slow_from is None else (now - self._slow_from) / DOUBLE_MS
            return SLOW_START * 2 ** min(MOST_DOUBLINGS, doublings)
        return max(1.0, allowed)

    def _left(self, rate: Rate, now: int, *, calls: bool) -> int:
        return math.floor(self._cap(rate, now)) - (len(self._calls) if calls else self._in_window)

    def _pace_ms(self, records: int) -> int:
        """How long a call of `records` records takes of the found rates."""
        pace = 0.0
        for rate, used in ((self.records, records), (self.requests, 1)):
            allowed = self.allowed(rate)
            if rate.found is not None and allowed is not None:
                pace = max(pace, used * self.window_ms / max(1.0, allowed))
        return math.ceil(pace)

    def _until_room(self, now: int, rate: Rate, wanted: int, *, calls: bool) -> int:
        """Ms until the window has room for `wanted` more (records, or calls): as calls
        leave it, or as the slow start's cap grows."""
        cap = self._cap(rate, now)
        used = len(self._calls) if calls else self._in_window
        known = self.allowed(rate) is not None
        if known:
            wanted = min(wanted, int(cap))  # a call larger than the budget waits for all of it
        excess = used + wanted - math.floor(cap)
        if excess <= 0:
            return 0
        leaving = self.window_ms
        for when, records, _ in self._calls:  # oldest first: each call leaves the window in turn
            excess -= 1 if calls else records
            if excess <= 0:
                leaving = max(0, when + self.window_ms - now + 1)
                break
        if known or self._slow_from is None:
            return leaving
        growing = self._slow_from + DOUBLE_MS * math.log2((used + wanted) / SLOW_START) - now
        return max(1, min(leaving, math.ceil(growing)))

    def _expire(self, now: int) -> None:
        while self._calls and self._calls[0][0] <= now - self.window_ms:
            _, records, refused = self._calls.popleft()
            self._in_window -= records
            self._refused -= refused
