"""The sending of versions to a board: the lanes' versions wait in one queue (`Batcher`, first
come first served, never two of one posting), and a dispatcher starts a call when a batch is
due, the rate budget and the day's quota admit it, the circuit lets it through and fewer than
`max_in_flight` calls are in flight (`BoardAccess` says the middle ones). Each call carries a batch to
the board's adapter with the process's token, and each ticket is settled with its own
element's outcome.

What is about the board as a whole is handled here once and charged to no posting: a 429
(`Throttled`) or the board down (`BoardDown`) puts the call's elements back at the head of
the queue untouched; while the circuit is not closed a failed call's elements go back too.
A daily cap reached holds the queue until the reset: no call, every queued version told.
Only a call that fails while the board is thought up (`CallFailed`) makes its elements
`Unsure`, which their lanes charge. When the board is announced unavailable, every queued
version is told (`Ticket.pause`), so its lane shows when the board is tried next.

A waiting element always has a clock: the dispatcher's timer, or a call in flight whose end
wakes it; `stranded` counts the elements for which neither holds (the watchdog's
`jobpost_delivery_stranded_postings`, which must stay 0).
"""

from __future__ import annotations

import asyncio
import logging

from consumers.boards.base import (
    BoardAdapter,
    BoardDown,
    CallFailed,
    ElementOutcome,
    JobAction,
    Throttled,
    Unsure,
)
from consumers.clock import Clock
from consumers.destination import metrics
from consumers.destination.access import A_SEND, BoardAccess
from consumers.destination.batcher import Batcher
from consumers.destination.quota import QuotaKind
from consumers.destination.ticket import Ticket

log = logging.getLogger(__name__)

# Under a budget that admits fewer records than wait, a call waits this long at most for
# room for a full batch (fewer, fuller calls against a per-request quota).
COALESCE_MS = 1_000


class Sending:
    def __init__(
        self,
        adapter: BoardAdapter,
        access: BoardAccess,
        clock: Clock,
        *,
        max_in_flight: int,
        batch_wait_ms: float,
    ) -> None:
        self.adapter = adapter
        self.access = access
        self.name = adapter.destination
        self.clock = clock
        self.max_in_flight = max_in_flight
        self.batcher: Batcher[Ticket] = Batcher(adapter.max_batch, batch_wait_ms)
        self.in_flight = 0
        self.wake = asyncio.Event()
        access.wakes(self.wake)
        self._announced = 0  # the last announcement the queue was told
        self._resting = False  # the dispatcher waits for `wake` alone, with no timer
        self._calls: set[asyncio.Task[None]] = set()

    def submit(self, action: JobAction) -> Ticket:
        ticket = Ticket(action, self.clock.now_ms())
        self.batcher.push(ticket, ticket.queued_at)
        if (hold := self.access.hold(ticket.queued_at)) is not None:
            ticket.pause(*hold)
        self.wake.set()
        return ticket

    def withdraw(self, ticket: Ticket) -> bool:
        """Take a ticket back before it is sent (True); False once it is in a call."""
        return self.batcher.withdraw(ticket)

    def stranded(self, polling: bool) -> int:
        """Elements waiting for a call that nothing will make: the dispatcher rests without a
        timer and no call (a send, or a task poll: `polling`) is in flight to wake it. Always
        0 unless a wake-up was lost."""
        if self._resting and self.in_flight == 0 and not polling:
            return len(self.batcher)
        return 0

    async def dispatch(self) -> None:
        """Start calls as they are due, until cancelled."""
        try:
            while True:
                self.wake.clear()
                self._tell_announcement()
                now = self.clock.now_ms()
                wait = self._wait_before_call(now)
                self._tell_announcement()  # a daily cap that holds the queue from now
                if wait is None:
                    self._resting = True
                    try:
                        await self.wake.wait()
                    finally:
                        self._resting = False
                elif wait > 0:
                    await self.clock.sleep(wait / 1000, self.wake)
                else:
                    self._start_call(now)
        finally:
            for call in self._calls:
                call.cancel()
            await asyncio.gather(*self._calls, return_exceptions=True)

    def _wait_before_call(self, now: int) -> int | None:
        """Ms until the next call may start (0: now; None: until something changes)."""
        due = self.batcher.due_in(now)
        if due is None or self.in_flight >= self.max_in_flight:
            return None
        if (held := self.access.held_for_the_day(now, A_SEND)) > 0:
            return held
        budget = self.access.budget
        wanted = min(len(self.batcher), self.batcher.max_batch)
        admits = self.access.admits(now)
        if admits == 0:
            return max(1, budget.wait_ms(now, 1))
        if admits < wanted and 0 < (room := budget.wait_ms(now, wanted)) <= COALESCE_MS:
            return room  # room for a fuller call soon (0: the rate never holds a full one)
        if due > 0:
            return due
        permit = self.access.may_call(now)
        if not permit.call:
            return permit.wait_ms
        return 0

    def _start_call(self, now: int) -> None:
        taken = self.batcher.take(min(self.access.admits(now), self.batcher.max_batch))
        if not taken:
            self.access.release(now)  # the probe, if this was to be one
            return
        tickets = [ticket for ticket, _ in taken]
        for ticket in tickets:
            ticket.sent_at = now
        needs = {QuotaKind.RECORDS: len(tickets), QuotaKind.REQUESTS: 1}
        spent = self.access.spend(now, len(tickets), needs)
        self.in_flight += 1
        self._calls.add(call := asyncio.create_task(self._send(tickets, [at for _, at in taken], spent)))
        call.add_done_callback(self._calls.discard)

    async def _send(self, tickets: list[Ticket], queued_at: list[int], spent: list[int]) -> None:
        metrics.BATCH_RECORDS.labels(self.name).observe(len(tickets))
        actions = [ticket.action for ticket in tickets]
        try:
            outcomes = await self.access.call(lambda token: self.adapter.send(actions, token))
        except Throttled as exc:
            self._count("throttled")
            self.access.throttled(self.clock.now_ms(), exc, spent)
            self._tell_announcement()
            self._requeue(tickets, queued_at)
        except BoardDown as exc:
            self._count("board_down")
            log.warning("%s is down: %s", self.name, exc)
            self.access.board_down(self.clock.now_ms(), exc)
            self._tell_announcement()
            self._requeue(tickets, queued_at)
        except CallFailed as exc:
            self._count("failed")
            self._failed(tickets, queued_at, [Unsure(str(exc))] * len(tickets))
        except Exception as exc:  # an adapter's bug is that call's failure, never the lane's death
            log.exception("%s: unexpected failure of a call", self.name)
            self._count("failed")
            reason = f"unexpected {type(exc).__name__}: {str(exc)[:300]}"
            self._failed(tickets, queued_at, [Unsure(reason)] * len(tickets))
        else:
            self._answered(tickets, queued_at, outcomes)
        finally:
            self.in_flight -= 1
            self.wake.set()

    def _answered(self, tickets: list[Ticket], queued_at: list[int], outcomes: list[ElementOutcome]) -> None:
        if len(outcomes) != len(tickets):
            self._count("failed")
            reason = f"{self.name}'s adapter answered {len(outcomes)} outcomes for {len(tickets)} elements"
            self._failed(tickets, queued_at, [Unsure(reason)] * len(tickets))
        elif all(isinstance(outcome, Unsure) for outcome in outcomes):
            self._count("failed")  # the board answered, but of no element what became of it
            self._failed(tickets, queued_at, outcomes)
        else:
            self._count("answered")
            self.access.answered(self.clock.now_ms())
            for ticket, outcome in zip(tickets, outcomes, strict=True):
                ticket.settle(outcome)

    def _failed(self, tickets: list[Ticket], queued_at: list[int], outcomes: list[ElementOutcome]) -> None:
        """A call that says nothing about its elements: charged to them (each `Unsure`)
        while the board is thought up; put back untouched once its circuit is not closed."""
        was_closed = self.access.circuit.closed
        reason = next((o.reason for o in outcomes if isinstance(o, Unsure)), "the call failed")
        self.access.call_failed(self.clock.now_ms(), [t.action.posting_id for t in tickets], reason)
        self._tell_announcement()
        if not was_closed:
            self._requeue(tickets, queued_at)
            return
        for ticket, outcome in zip(tickets, outcomes, strict=True):
            ticket.settle(outcome)

    def _requeue(self, tickets: list[Ticket], queued_at: list[int]) -> None:
        waiting = [(t, at) for t, at in zip(tickets, queued_at, strict=True) if not t.outcome.done()]
        self.batcher.push_front([t for t, _ in waiting], [at for _, at in waiting])
        for ticket, _ in waiting:
            ticket.notice.set()  # back in the queue: its lane may take it back (a newer version came)
        if not self.access.circuit.closed:
            until = self.access.next_probe_at(self.clock.now_ms())
            for ticket in self.batcher.waiting():
                ticket.pause(self.access.why_paused(), until)

    def _tell_announcement(self) -> None:
        """Tell every queued version of an announcement it was not told yet (made by this
        call, or by the task poller's)."""
        announcement = self.access.announcement
        if announcement is None or announcement.number == self._announced:
            return
        self._announced = announcement.number
        for ticket in self.batcher.waiting():
            ticket.pause(announcement.reason, announcement.until)

    def _count(self, outcome: str) -> None:
        metrics.CALLS.labels(self.name, "send", outcome).inc()
