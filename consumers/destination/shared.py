"""The destination: one per board per process, what every lane of that board shares.

A lane hands its posting's next version to `submit` and gets a `Ticket`; the destination
sends it in a batch with other postings' versions (`Batcher`), when the rate budget admits
the call (`RateBudget`) and the circuit lets calls through (`Circuit`), with the process's
one access token (`TokenSource`), at most `max_in_flight` calls at a time, and resolves
each ticket with its own element's outcome. What is about the board as a whole is handled
here, once, and charged to no posting: a 429 (`Throttled`) or the board down (`BoardDown`)
puts the call's elements back at the head of the queue untouched; while the circuit is not
closed a failed call's elements go back too. Only a call that fails while the board is
thought up (`CallFailed`) makes its elements `Unsure`, which their lanes charge. A 401
(`TokenRefused`) expires the token, fetches one and retries the call once; a second 401 is
`BoardDown`.

Every change of the circuit's state wakes everyone who waits on the destination (the
dispatcher, the task poller): either may rest until exactly that change, for a probe the
other one made. A waiting element always has a clock: the dispatcher's timer, or a call in
flight whose end wakes it; `stranded()` counts the elements for which neither holds (the
watchdog's `jobpost_delivery_stranded_postings`, which must stay 0).

The lanes keep their order and their retry budgets (`consumers.lanes`); the task poller of
an asynchronous board is `consumers.destination.confirming`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from consumers.boards.base import (
    BoardAdapter,
    BoardDown,
    CallFailed,
    ElementOutcome,
    TaskOutcome,
    Throttled,
    TokenSource,
    Unsure,
)
from consumers.clock import Clock, SystemClock
from consumers.destination import metrics
from consumers.destination.batcher import Batcher
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit, CircuitState, Permit
from consumers.destination.confirming import TaskPoller
from consumers.destination.ticket import Ticket
from consumers.destination.tokens import with_token
from schemas.model import PostingUpdate

log = logging.getLogger(__name__)

# Under a budget that admits fewer records than wait, a call waits this long at most for
# room for a full batch (fewer, fuller calls against a per-request quota).
COALESCE_MS = 1_000
# A 429 asking for at least this long pauses the lanes visibly (`PAUSED`), as an open circuit does.
LONG_THROTTLE_MS = 10_000

R = TypeVar("R")


class SharedDestination:
    def __init__(
        self,
        adapter: BoardAdapter,
        tokens: TokenSource,
        budget: RateBudget,
        circuit: Circuit,
        *,
        max_in_flight: int = 32,
        batch_wait_ms: float = 5.0,
        task_poll_interval_s: float = 2.0,
        task_timeout_s: float = 600.0,
        clock: Clock | None = None,
    ) -> None:
        self.adapter = adapter
        self.name = adapter.destination
        self.tokens = tokens
        self.budget = budget
        self.circuit = circuit
        self.max_in_flight = max_in_flight
        self.clock = clock or SystemClock()
        self.batcher: Batcher[Ticket] = Batcher(adapter.max_batch, batch_wait_ms)
        self.in_flight = 0
        self.wake = asyncio.Event()
        self._resting = False  # the dispatcher waits for `wake` alone, with no timer
        self._tasks: set[asyncio.Task[None]] = set()
        self._dispatcher: asyncio.Task[None] | None = None
        self.tasks = TaskPoller(self, task_poll_interval_s, task_timeout_s) if adapter.confirms else None
        self._publish()

    @property
    def confirms(self) -> bool:
        """Versions are `Submitted` and confirmed later (LinkedIn's tasks)."""
        return self.tasks is not None

    def start(self) -> None:
        self._dispatcher = asyncio.create_task(self._dispatch())
        if self.tasks is not None:
            self.tasks.start()

    async def confirm(self, task_id: str, submitted_at: int) -> TaskOutcome:
        """Wait until the board reports the task ended (`consumers.destination.confirming`)."""
        if self.tasks is None:
            raise RuntimeError(f"{self.name} answers synchronously: it has no tasks to confirm")
        return await self.tasks.confirm(task_id, submitted_at)

    async def close(self) -> None:
        if self.tasks is not None:
            await self.tasks.close()
        for task in [self._dispatcher, *self._tasks]:
            if task is not None:
                task.cancel()
        await asyncio.gather(*[t for t in [self._dispatcher, *self._tasks] if t], return_exceptions=True)

    def submit(self, update: PostingUpdate) -> Ticket:
        ticket = Ticket(update, self.clock.now_ms())
        self.batcher.push(ticket, ticket.queued_at)
        if not self.circuit.closed:
            ticket.pause(self._why_paused(), self._next_probe_at(ticket.queued_at))
        self.wake.set()
        return ticket

    def task_deadline(self, submitted_at: int) -> int:
        """When a submitted version is sent again unless its task ended (`TaskBook`)."""
        return submitted_at + (self.tasks.book.timeout_ms if self.tasks is not None else 0)

    def withdraw(self, ticket: Ticket) -> bool:
        """Take a ticket back before it is sent (True); False once it is in a call."""
        return self.batcher.withdraw(ticket)

    def set_share(self, owned: int, total: int) -> None:
        self.budget.set_share(owned, total)
        self._publish()
        self.wake.set()

    async def call(self, make: Callable[[str], Awaitable[R]]) -> R:
        """One board call with the process's token (`consumers.destination.tokens`)."""
        return await with_token(self.tokens, self.name, make)

    def may_call(self, now: int) -> Permit:
        """Whether a call may start now as far as the circuit is concerned (taking the one
        probe when it is due: `permit.probe`; a caller with nothing to send after all gives
        it back with `release`); else how long to wait (None: until woken)."""
        return self._on_circuit(now, lambda: self.circuit.permit(now))

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
        pause = self.budget.throttled(now, exc.retry_after_s, call)
        self._on_circuit(now, lambda: self.circuit.answered(now))  # a board that answers 429 is up
        log.warning("%s throttled us for %.1f s: %s", self.name, pause / 1000, exc)
        if pause >= LONG_THROTTLE_MS:
            reason = f"{self.name} throttled the calls for {pause / 1000:.0f} s: {exc}"
            self._pause_queued(reason, now + pause)

    def board_down(self, now: int, exc: BaseException) -> None:
        if self._on_circuit(now, lambda: self.circuit.board_down(now, str(exc))):
            self._opened()

    def call_failed(self, now: int, posting_ids: list[str], reason: str) -> None:
        if self._on_circuit(now, lambda: self.circuit.call_failed(now, posting_ids, reason)):
            self._opened()

    def stranded(self) -> int:
        """Elements waiting for a call that nothing will make: the dispatcher rests without a
        timer and no call (a send or a task poll) is in flight to wake it. Always 0 unless a
        wake-up was lost; the watchdog metric counts them."""
        polling = self.tasks is not None and self.tasks.asking
        if self._resting and self.in_flight == 0 and not polling:
            return len(self.batcher)
        return 0

    def _on_circuit(self, now: int, event: Callable[[], R]) -> R:
        """Apply an event to the circuit. Any change of its state wakes the dispatcher and the
        task poller, which may be resting until exactly that (a probe the other one made
        answered, or failed and set a later one); a new wait while open is told to every
        paused element, so its lane shows when the board is tried next."""
        before = self.circuit.state
        result = event()
        if self.circuit.state != before:
            self.wake.set()
            if self.tasks is not None:
                self.tasks.wake()
            if self.circuit.state == CircuitState.OPEN and before == CircuitState.PROBING:
                self._pause_queued(self._why_paused(), self.circuit.next_probe_at)
        self._publish()
        return result

    async def _dispatch(self) -> None:
        while True:
            self.wake.clear()
            now = self.clock.now_ms()
            wait = self._wait_before_call(now)
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

    def _wait_before_call(self, now: int) -> int | None:
        """Ms until the next call may start (0: now; None: until something changes)."""
        due = self.batcher.due_in(now)
        if due is None or self.in_flight >= self.max_in_flight:
            return None
        wanted = min(len(self.batcher), self.batcher.max_batch)
        admits = self.budget.admits(now)
        if admits == 0:
            return max(1, self.budget.wait_ms(now, 1))
        if admits < wanted and 0 < (room := self.budget.wait_ms(now, wanted)) <= COALESCE_MS:
            return room  # room for a fuller call soon (0: the rate never holds a full one)
        if due > 0:
            return due
        permit = self.may_call(now)
        if not permit.call:
            return permit.wait_ms
        return 0

    def _start_call(self, now: int) -> None:
        taken = self.batcher.take(min(self.budget.admits(now), self.batcher.max_batch))
        if not taken:
            self.release(now)  # the probe, if this was to be one
            return
        tickets = [ticket for ticket, _ in taken]
        for ticket in tickets:
            ticket.sent_at = now
        spent = self.budget.spend(now, len(tickets))
        self.in_flight += 1
        self._tasks.add(call := asyncio.create_task(self._send(tickets, [at for _, at in taken], spent)))
        call.add_done_callback(self._tasks.discard)

    async def _send(self, tickets: list[Ticket], queued_at: list[int], spent: list[int]) -> None:
        metrics.BATCH_RECORDS.labels(self.name).observe(len(tickets))
        updates = [ticket.update for ticket in tickets]
        try:
            outcomes = await self.call(lambda token: self.adapter.send(updates, token))
        except Throttled as exc:
            self._count("throttled")
            self.throttled(self.clock.now_ms(), exc, spent)
            self._requeue(tickets, queued_at)
        except BoardDown as exc:
            self._count("board_down")
            log.warning("%s is down: %s", self.name, exc)
            self.board_down(self.clock.now_ms(), exc)
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
            self.answered(self.clock.now_ms())
            for ticket, outcome in zip(tickets, outcomes, strict=True):
                ticket.settle(outcome)

    def _failed(self, tickets: list[Ticket], queued_at: list[int], outcomes: list[ElementOutcome]) -> None:
        """A call that says nothing about its elements: charged to them (each `Unsure`)
        while the board is thought up; put back untouched once its circuit is not closed."""
        was_closed = self.circuit.closed
        reason = next((o.reason for o in outcomes if isinstance(o, Unsure)), "the call failed")
        self.call_failed(self.clock.now_ms(), [t.update.posting_id for t in tickets], reason)
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
        if not self.circuit.closed:
            self._pause_queued(self._why_paused(), self._next_probe_at(self.clock.now_ms()))

    def _opened(self) -> None:
        because = self.circuit.opened_because
        metrics.CIRCUIT_OPENED.labels(self.name, because.value if because else "unknown").inc()
        log.error(
            "%s's circuit is open (%s): no lane calls until a probe is answered",
            self.name,
            self.circuit.reason,
        )
        self._pause_queued(self._why_paused(), self.circuit.next_probe_at)

    def _why_paused(self) -> str:
        return f"{self.name} is unavailable: {self.circuit.reason}"

    def _next_probe_at(self, now: int) -> int:
        """When the board is tried next while the circuit is not closed (a probe in flight:
        now)."""
        return self.circuit.next_probe_at or now

    def _pause_queued(self, reason: str, until: int | None) -> None:
        for ticket in self.batcher.waiting():
            ticket.pause(reason, until)

    def _count(self, outcome: str) -> None:
        metrics.CALLS.labels(self.name, "send", outcome).inc()

    def _publish(self) -> None:
        metrics.publish(self.name, self.circuit.state, self.budget)
