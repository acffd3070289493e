"""One version's way to the board, inside its posting's lane: the lane's side of a
delivery. It keeps the posting's order and its retry budget; the board as a whole (token,
budget, circuit, batches, tasks) is the destination's (`consumers.destination`).

`Delivered` → delivered (or closed, for a DELETED version); `Submitted(task_id)` →
recorded `SUBMITTED` with the task id, then the task's end decides: `SUCCEEDED` delivered,
`FAILED` dead-lettered with the board's error, still in progress past the timeout retried
like a failed call; `Rejected` → dead-lettered; `Unsure` → retried per the policy, the
attempt charged. Time the destination held the version for the board (its circuit open, a
429, the budget) is not charged: neither the attempt count nor the elapsed time of the
budget, and it is kept in the state (`uncharged_ms`) so a restarted consumer agrees. While
the destination holds it because the board is down the state says `PAUSED`, once.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from prometheus_client import Counter

from consumers.boards.base import (
    Delivered,
    ElementOutcome,
    Rejected,
    Submitted,
    TaskOutcome,
    TaskState,
    Unsure,
)
from consumers.clock import Clock
from consumers.destination.ticket import Ticket
from consumers.items import Item
from consumers.retry import RetryPolicy
from consumers.rules import Progress, done_already, next_state, redrive_skipped, superseded_by
from schemas.deliveries import OUTCOME_OF_STATUS, delivery_event
from schemas.enums import DeliveryOutcome
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState, DeliveryStatus, Destination, PostingUpdate

log = logging.getLogger(__name__)

DELIVERIES = Counter(
    "jobpost_deliveries_total", "Delivery outcomes by destination", ["destination", "outcome"]
)
ATTEMPTS = Counter("jobpost_delivery_attempts_total", "Versions sent to the board", ["destination"])


class Board(Protocol):
    """What a lane needs of its destination (`consumers.destination.shared.SharedDestination`)."""

    @property
    def confirms(self) -> bool: ...

    def submit(self, update: PostingUpdate) -> Ticket: ...

    def withdraw(self, ticket: Ticket) -> bool: ...

    def task_deadline(self, submitted_at: int) -> int:
        """When a version submitted at `submitted_at` is sent again if its task has not
        ended by then."""

    async def confirm(self, task_id: str, submitted_at: int) -> TaskOutcome: ...


class DeliveryStates(Protocol):
    """Each posting's DeliveryState at this destination, as `Outcomes.record` last wrote
    it (or a restore found it). The lanes only read it."""

    def get(self, posting_id: str, /) -> DeliveryState | None: ...


class Outcomes(Protocol):
    async def record(self, item: Item, state: DeliveryState) -> None:
        """Write the posting's DeliveryState; return once it is acknowledged, and readable
        through the lanes' `DeliveryStates`."""

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        """Write the version to the dead-letter topic; return once it is acknowledged."""

    def event(self, item: Item, event: DeliveryEvent) -> None:
        """Publish what an attempt came to (the posting's timeline), without waiting."""


class Lane(Protocol):
    """The posting's lane as a delivery sees it (`consumers.lanes`)."""

    ticket: Ticket | None

    def later(self) -> list[Item]:
        """The records queued behind the one being delivered."""

    async def wait(self, seconds: float) -> None:
        """Sleep, cut short when a record arrives that may supersede the one delivered."""


class VersionDelivery:
    def __init__(
        self,
        destination: Destination,
        board: Board,
        outcomes: Outcomes,
        states: DeliveryStates,
        policy: RetryPolicy,
        clock: Clock,
        conflate: bool,
    ) -> None:
        self.destination = destination
        self.board = board
        self.outcomes = outcomes
        self.states = states
        self.policy = policy
        self.clock = clock
        self.conflate = conflate

    async def deliver(self, item: Item, lane: Lane) -> None:
        if item.update is None:
            return  # a tombstone: the DELETED version before it is what we act on
        state = self.states.get(item.posting_id) or DeliveryState(
            self.destination, item.posting_id, DeliveryStatus.PENDING
        )
        now = self.clock.now_ms()
        if item.request is not None:
            why = redrive_skipped(item.version, state, lane.later())
            if why is not None:
                self._count("superseded")
                self._event(item, DeliveryOutcome.SKIPPED, 0, f"redrive: {why}")
                return
            progress = Progress()  # a redrive gets a fresh budget
        elif done_already(state, item.version):
            self._count("replayed")
            return
        else:
            progress = Progress.resume(state, item.version, now)
        outcome: ElementOutcome | None = None
        if progress.task_id is not None:  # submitted before a restart: poll it, never submit again
            outcome = await self._confirmed(item, progress, progress.task_id)
        while True:
            if outcome is None:
                outcome = await self._attempt(item, lane, progress)
                if outcome is None:
                    return  # superseded
            if isinstance(outcome, Delivered):
                status = DeliveryStatus.CLOSED if item.deletes else DeliveryStatus.DELIVERED
                await self._record(item, status, progress)
                self._count("delivered")
                return
            if isinstance(outcome, Rejected):
                await self._dead_letter(item, progress, outcome.reason)
                return
            assert isinstance(outcome, Unsure)
            if not await self._retry_later(item, progress, outcome):
                return
            outcome = None

    async def _attempt(self, item: Item, lane: Lane, progress: Progress) -> ElementOutcome | None:
        """Wait for the next attempt, send the version through the destination and, for a
        board that confirms, wait for its task. None when a later record superseded it."""
        while (due := progress.next_attempt_at) is not None and due > self.clock.now_ms():
            if await self._skipped_if_superseded(item, lane, progress):
                return None
            await lane.wait((due - self.clock.now_ms()) / 1000)
        if await self._skipped_if_superseded(item, lane, progress):
            return None
        if progress.first_attempt_at is None:
            progress.first_attempt_at = self.clock.now_ms()
        outcome = await self._sent(item, lane, progress)
        if isinstance(outcome, Submitted):
            progress.task_id, progress.submitted_at = outcome.task_id, self.clock.now_ms()
            deadline = self.board.task_deadline(progress.submitted_at)
            await self._record(item, DeliveryStatus.SUBMITTED, progress, next_attempt_at=deadline)
            return await self._confirmed(item, progress, outcome.task_id)
        return outcome

    async def _sent(self, item: Item, lane: Lane, progress: Progress) -> ElementOutcome | None:
        """The element's outcome; None when it was taken back unsent because a later record
        superseded it."""
        assert item.update is not None
        ticket = self.board.submit(item.update)
        lane.ticket = ticket
        paused: tuple[str, int | None] | None = None  # what the state says of the pause
        try:
            while not ticket.outcome.done():
                await ticket.notice.wait()
                ticket.notice.clear()
                if ticket.outcome.done():
                    break
                if self._superseded(item, lane) is not None and self.board.withdraw(ticket):
                    await self._skipped_if_superseded(item, lane, progress)
                    return None
                if ticket.pause_reason is not None and paused != (ticket.pause_reason, ticket.paused_until):
                    paused = (ticket.pause_reason, ticket.paused_until)
                    await self._record(
                        item, DeliveryStatus.PAUSED, progress,
                        paused_reason=ticket.pause_reason, next_attempt_at=ticket.paused_until,
                    )  # fmt: skip
        finally:
            lane.ticket = None
            if not ticket.outcome.done():
                self.board.withdraw(ticket)  # the lane was cancelled (its partition moved)
        progress.uncharged_ms += ticket.held_ms
        progress.attempts += 1
        ATTEMPTS.labels(self.destination).inc()
        return ticket.outcome.result()

    async def _confirmed(self, item: Item, progress: Progress, task_id: str) -> ElementOutcome:
        """Wait for the task of the version the board accepted; the next version of the
        posting is not sent before it ended."""
        submitted_at = progress.submitted_at if progress.submitted_at is not None else self.clock.now_ms()
        ended = await self.board.confirm(task_id, submitted_at)
        progress.task_id = progress.submitted_at = None
        if ended.state == TaskState.SUCCEEDED:
            return Delivered()
        if ended.state == TaskState.FAILED:
            return Rejected(f"{self.destination} task {task_id} failed: {ended.error or 'no reason given'}")
        return Unsure(ended.error or f"{self.destination} task {task_id} did not end in time")

    async def _retry_later(self, item: Item, progress: Progress, outcome: Unsure) -> bool:
        """Charge the failed attempt; False once the budget is spent (dead-lettered)."""
        now = self.clock.now_ms()
        wait = self.policy.next_wait(progress.attempts, progress.charged_s(now), outcome.retry_after_s)
        if wait is None:
            await self._dead_letter(item, progress, f"retries spent: {outcome.reason}")
            return False
        progress.next_attempt_at = now + int(wait * 1000)
        await self._record(item, DeliveryStatus.RETRYING, progress, error=outcome.reason)
        log.info("attempt %d failed, next in %.1f s: %s", progress.attempts, wait, outcome.reason,
                 extra=self._context(item))  # fmt: skip
        return True

    def _superseded(self, item: Item, lane: Lane) -> int | None:
        return superseded_by(item, lane.later(), self.conflate)

    async def _skipped_if_superseded(self, item: Item, lane: Lane, progress: Progress) -> bool:
        newer = self._superseded(item, lane)
        if newer is None:
            return False
        self._count("superseded")
        why = "a later delete" if any(r.deletes and r.version == newer for r in lane.later()) else f"v{newer}"
        self._event(item, DeliveryOutcome.SKIPPED, progress.attempts, f"superseded by {why}")
        return True

    async def _dead_letter(self, item: Item, progress: Progress, error: str) -> None:
        self._count("dead_lettered")
        first = progress.first_attempt_at if progress.first_attempt_at is not None else self.clock.now_ms()
        await self.outcomes.dead_letter(item, error, max(1, progress.attempts), first)
        await self._record(item, DeliveryStatus.FAILED, progress, error=error)

    async def _record(
        self,
        item: Item,
        status: DeliveryStatus,
        progress: Progress,
        *,
        error: str | None = None,
        paused_reason: str | None = None,
        next_attempt_at: int | None = None,
    ) -> None:
        now = self.clock.now_ms()
        before = self.states.get(item.posting_id)
        state = next_state(
            self.destination,
            item,
            before,
            status,
            progress,
            now=now,
            error=error,
            paused_reason=paused_reason,
            next_attempt_at=next_attempt_at,
        )
        self._event(
            item, OUTCOME_OF_STATUS[status], progress.attempts,
            paused_reason if status == DeliveryStatus.PAUSED else error,
            next_attempt_at=state.next_attempt_at, task_id=state.task_id,
        )  # fmt: skip
        await self.outcomes.record(item, state)

    def _event(
        self,
        item: Item,
        outcome: DeliveryOutcome,
        attempts: int,
        error: str | None,
        *,
        next_attempt_at: int | None = None,
        task_id: str | None = None,
    ) -> None:
        event = delivery_event(
            self.destination, item.posting_id, item.version, outcome, attempts, error=error,
            next_attempt_at=next_attempt_at, at=self.clock.now_ms(), task_id=task_id,
            request_id=item.request_id,
        )  # fmt: skip
        self.outcomes.event(item, event)

    def _count(self, outcome: str) -> None:
        DELIVERIES.labels(self.destination, outcome).inc()

    def _context(self, item: Item) -> dict[str, Any]:
        return {"posting_id": item.posting_id, "version": item.version, "destination": self.destination}
