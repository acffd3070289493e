"""Access to a board, as every caller of it in a process shares it (the sending of versions,
`consumers.destination.sending`, and the task poller, `consumers.destination.confirming`):
whether a call may start now (the rate budget, `RateBudget`, the day's quota, `DailyQuota`,
and the circuit, `Circuit`), the call itself with the process's one access token
(`board_tokens.with_token`), and what the board's answer says of the board as a whole
(answered, throttled, down, failed).

Every change of the circuit's state sets each caller's wake event: either may rest until
exactly that change, for a probe the other one made. When the board becomes unavailable
(the circuit opens, or a 429 holds every call for long) it is announced (`announcement`):
the sending holds its queued versions visibly (`PAUSED`, with when the board is tried next),
whoever made the call that told it. So is a daily cap the sending reached: its versions
are held (`PAUSED`, `daily quota: …`) until the reset, charged to no posting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from consumers.board_tokens import with_token
from consumers.boards.base import Throttled, TokenSource
from consumers.destination import metrics
from consumers.destination.budget import WINDOW_MS, RateBudget
from consumers.destination.circuit import Circuit, CircuitState, Permit
from consumers.destination.quota import DailyQuota, QuotaKind
from consumers.destination.use import UseMeter
from schemas.model import Destination

log = logging.getLogger(__name__)

# A 429 asking for at least this long pauses the lanes visibly (`PAUSED`), as an open circuit does.
LONG_THROTTLE_MS = 10_000
# What a call of the sending needs of the day's quota at least, and what a task poll needs.
A_SEND = {QuotaKind.RECORDS: 1, QuotaKind.REQUESTS: 1}
A_TASK_POLL = {QuotaKind.TASK_STATUS_CALLS: 1}

R = TypeVar("R")


@dataclass(frozen=True)
class Announcement:
    """The board is unavailable: why, and when it is tried next (epoch ms). `number` grows
    with each announcement."""

    number: int
    reason: str
    until: int | None


class BoardAccess:
    def __init__(
        self,
        name: Destination,
        tokens: TokenSource,
        budget: RateBudget,
        circuit: Circuit,
        quota: DailyQuota | None = None,
    ) -> None:
        self.name = name
        self.tokens = tokens
        self.budget = budget
        self.circuit = circuit
        self.quota = quota or DailyQuota({})
        self.meter = UseMeter(WINDOW_MS)  # what the calls used this minute (`board_status`)
        self.announcement: Announcement | None = None
        self.day_hold: Announcement | None = None  # the sending's, while a daily cap holds it
        self._holds: dict[frozenset[QuotaKind], int] = {}  # the reset each kind of call waits for
        self._wakes: list[asyncio.Event] = []
        self._publish()

    def wakes(self, event: asyncio.Event) -> None:
        """Set `event` at every change of the circuit's state (and of the budget's share)."""
        self._wakes.append(event)

    async def call(self, make: Callable[[str], Awaitable[R]]) -> R:
        """One board call with the process's token."""
        return await with_token(self.tokens, self.name, make)

    def may_call(self, now: int) -> Permit:
        """Whether a call may start now as far as the circuit is concerned (taking the one
        probe when it is due: `permit.probe`; a caller with nothing to send after all gives
        it back with `release`); else how long to wait (None: until woken)."""
        return self._on_circuit(now, lambda: self.circuit.permit(now))

    def held_for_the_day(self, now: int, needs: Mapping[QuotaKind, int]) -> int:
        """0 when today's quota leaves room for a call needing `needs`; else ms until the
        reset. A hold starting is counted; the sending's is announced (its lanes show
        `PAUSED` with the reason and the reset)."""
        kind = self.quota.exhausted(now, needs)
        if kind is None:
            return 0
        until = self.quota.reset_at(now)
        key = frozenset(needs)
        if self._holds.get(key) != until:
            self._holds[key] = until
            metrics.DAILY_QUOTA_HOLDS.labels(self.name).inc()
            reason = self.quota.reason(kind, now)
            log.warning("%s: %s", self.name, reason)
            if QuotaKind.RECORDS in needs:
                self._announce(reason, until)
                self.day_hold = self.announcement
        metrics.publish_quota(self.name, self.quota, now)
        return until - now

    def admits(self, now: int) -> int:
        """How many records one call of the sending may carry now: the rate budget's, within
        what is left of today's records and requests."""
        admits = self.budget.admits(now)
        if not self.quota.allows(QuotaKind.REQUESTS, 1, now):
            return 0
        left = self.quota.left(QuotaKind.RECORDS, now)
        return admits if left is None else min(admits, left)

    def spend(self, now: int, records: int, needs: Mapping[QuotaKind, int]) -> list[int]:
        """A call starts now: counted by the rate budget (the handle `throttled` takes), by
        the meter of this minute's use and against today's quota."""
        for kind, n in needs.items():
            self.quota.take(kind, n, now)
        metrics.publish_quota(self.name, self.quota, now)
        call = self.budget.spend(now, records)
        self.meter.spent(now, records, call)
        return call

    def hold(self, now: int) -> tuple[str, int] | None:
        """Why a version queued now waits for the board as a whole, and until when: the
        circuit not closed, or a daily cap until its reset; None: it does not."""
        if not self.circuit.closed:
            return self.why_paused(), self.next_probe_at(now)
        day = self.day_hold
        if day is not None and day.until is not None and now < day.until:
            return day.reason, day.until
        return None

    def release(self, now: int) -> None:
        """A probe taken by `may_call` and not used."""
        self._on_circuit(now, lambda: self.circuit.release(now))

    def answered(self, now: int) -> None:
        """A call the board took (what it said of the elements aside)."""
        self.budget.answered(now)
        if self._on_circuit(now, lambda: self.circuit.answered(now)):
            log.warning("%s answers again: its circuit is closed, every lane resumes", self.name)

    def throttled(self, now: int, exc: Throttled, call: list[int] | None = None) -> None:
        metrics.THROTTLED.labels(self.name).inc()
        if call is not None:
            self.meter.refused(call)
        pause = self.budget.throttled(now, exc.retry_after_s, call)
        self._on_circuit(now, lambda: self.circuit.answered(now))  # a board that answers 429 is up
        log.warning("%s throttled us for %.1f s: %s", self.name, pause / 1000, exc)
        if pause >= LONG_THROTTLE_MS:
            self._announce(f"{self.name} throttled the calls for {pause / 1000:.0f} s: {exc}", now + pause)

    def board_down(self, now: int, exc: BaseException) -> None:
        self._on_circuit(now, lambda: self.circuit.board_down(now, str(exc)))

    def call_failed(self, now: int, posting_ids: list[str], reason: str) -> None:
        self._on_circuit(now, lambda: self.circuit.call_failed(now, posting_ids, reason))

    def set_share(self, owned: int, total: int) -> None:
        self.budget.set_share(owned, total)
        self.quota.set_share(owned, total)
        self._publish()
        self._wake()

    def why_paused(self) -> str:
        return f"{self.name} is unavailable: {self.circuit.reason}"

    def next_probe_at(self, now: int) -> int:
        """When the board is tried next while the circuit is not closed (a probe in flight:
        now)."""
        return self.circuit.next_probe_at or now

    def _on_circuit(self, now: int, event: Callable[[], R]) -> R:
        """Apply an event to the circuit. Any change of its state wakes every caller; the
        circuit opening (a first time, or again after a failed or released probe) is
        announced, with when the board is tried next."""
        before = self.circuit.state
        result = event()
        if self.circuit.state != before:
            if self.circuit.state == CircuitState.OPEN and before == CircuitState.CLOSED:
                because = self.circuit.opened_because
                metrics.CIRCUIT_OPENED.labels(self.name, because.value if because else "unknown").inc()
                log.error(
                    "%s's circuit is open (%s): no lane calls until a probe is answered",
                    self.name,
                    self.circuit.reason,
                )
            if self.circuit.state == CircuitState.OPEN:
                self._announce(self.why_paused(), self.circuit.next_probe_at)
            self._wake()
        self._publish()
        return result

    def _announce(self, reason: str, until: int | None) -> None:
        number = self.announcement.number + 1 if self.announcement is not None else 1
        self.announcement = Announcement(number, reason, until)

    def _wake(self) -> None:
        for event in self._wakes:
            event.set()

    def _publish(self) -> None:
        metrics.publish(self.name, self.circuit.state, self.budget)
        metrics.publish_quota(self.name, self.quota, None)
