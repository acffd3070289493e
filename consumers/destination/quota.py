"""A destination's daily quota: what a board admits per day (LinkedIn's premium sync API:
60,000 records and 100,000 requests a day, task-status calls capped too; "These limits reset
at midnight UTC every day"), counted as it is used and never exceeded.

A day starts at the board's reset time (a UTC time of day, 00:00 by default) and lasts
`day_ms` (a day, or a few seconds in a test that scales it). The caps are the whole
consumer group's; each member takes the share of the partitions it owns, as it does of the
per-minute budget (`budget.py`). Use is counted by this member when a call starts; the count
starts again at each reset.

Task-status polling stretches its interval (`poll_interval_ms`) so the calls it expects
until the reset, for the tasks open now, fit in what is left of its cap.

Pure: time is passed in (epoch milliseconds), so it is unit-tested without waiting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum

DAY_MS = 86_400_000


class QuotaKind(StrEnum):
    """What a daily cap counts (the `kind` label of the daily metrics)."""

    RECORDS = "records"
    REQUESTS = "requests"
    TASK_STATUS_CALLS = "task_status_calls"


WORDS = {
    QuotaKind.RECORDS: "records",
    QuotaKind.REQUESTS: "requests",
    QuotaKind.TASK_STATUS_CALLS: "task-status calls",
}


class DailyQuota:
    def __init__(
        self,
        caps: Mapping[QuotaKind, int | None],
        *,
        reset_offset_ms: int = 0,
        day_ms: int = DAY_MS,
    ) -> None:
        """`caps`: per day for the whole group (a kind left out, or None: no cap);
        `reset_offset_ms`: the reset's time of day after 00:00 UTC."""
        if day_ms <= 0:
            raise ValueError("a day lasts more than 0 ms")
        self.caps = {kind: cap for kind, cap in caps.items() if cap is not None}
        self.day_ms = day_ms
        self.offset_ms = reset_offset_ms % day_ms
        self.share = 1.0
        self._day: int | None = None
        self._used = dict.fromkeys(QuotaKind, 0)

    @property
    def capped(self) -> bool:
        """Whether any kind has a cap."""
        return bool(self.caps)

    def set_share(self, owned: int, total: int) -> None:
        """This member owns `owned` of the group's `total` partitions."""
        self.share = owned / total if total > 0 else 0.0

    def cap(self, kind: QuotaKind) -> int | None:
        """This member's cap of `kind` per day; None: none."""
        cap = self.caps.get(kind)
        return None if cap is None else math.floor(cap * self.share + 1e-9)

    def used(self, kind: QuotaKind, now: int) -> int:
        self._roll(now)
        return self._used[kind]

    def left(self, kind: QuotaKind, now: int) -> int | None:
        """What this member may still use of `kind` today; None: no cap."""
        cap = self.cap(kind)
        return None if cap is None else max(0, cap - self.used(kind, now))

    def allows(self, kind: QuotaKind, n: int, now: int) -> bool:
        left = self.left(kind, now)
        return left is None or n <= left

    def take(self, kind: QuotaKind, n: int, now: int) -> None:
        """Count `n` of `kind` used now (the caller checked `allows`)."""
        self._roll(now)
        self._used[kind] += n

    def reset_at(self, now: int) -> int:
        """The next reset after `now` (epoch ms)."""
        return (self._day_of(now) + 1) * self.day_ms + self.offset_ms

    def until_reset_ms(self, now: int) -> int:
        return self.reset_at(now) - now

    def exhausted(self, now: int, needs: Mapping[QuotaKind, int]) -> QuotaKind | None:
        """The first kind whose cap leaves less than `needs` asks for today, else None."""
        for kind, n in needs.items():
            if not self.allows(kind, n, now):
                return kind
        return None

    def reason(self, kind: QuotaKind, now: int) -> str:
        """Why calls wait: the cap reached and when it resets (UTC)."""
        at = datetime.fromtimestamp(self.reset_at(now) / 1000, UTC).isoformat(timespec="seconds")
        whole = self.caps[kind]
        mine = self.cap(kind)
        share = "" if mine == whole else f" (this member's share: {mine})"
        return (
            f"daily quota: {whole} {WORDS[kind]} a day used{share}; "
            f"calls resume at the reset, {at.replace('+00:00', 'Z')}"
        )

    def _day_of(self, now: int) -> int:
        return (now - self.offset_ms) // self.day_ms

    def _roll(self, now: int) -> None:
        day = self._day_of(now)
        if day != self._day:
            self._day = day
            self._used = dict.fromkeys(QuotaKind, 0)


def poll_interval_ms(
    base_ms: int, open_tasks: int, per_call: int, left: int | None, until_reset_ms: int
) -> int:
    """How often to ask about `open_tasks` tasks (`per_call` ids a call) so the calls until
    the reset fit in the `left` calls of the day: never more often than `base_ms`; None left:
    no cap. With fewer calls left than one round takes, the next round waits for the reset."""
    if left is None or open_tasks <= 0:
        return base_ms
    per_round = math.ceil(open_tasks / max(1, per_call))
    rounds = left // per_round
    if rounds < 1:
        return max(base_ms, until_reset_ms)
    return max(base_ms, math.ceil(until_reset_ms / rounds))


def reset_offset_ms(time_of_day: str) -> int:
    """'HH:MM' (or 'HH:MM:SS') UTC as ms after 00:00."""
    parts = [int(part) for part in time_of_day.split(":")]
    hours, minutes, seconds = [*parts, 0, 0][:3]
    return ((hours * 60 + minutes) * 60 + seconds) * 1000
