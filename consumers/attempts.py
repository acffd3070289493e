"""A version's attempts at the board, through the destination every lane shares, told as
news (`steps.News`) for the lane's rules to judge.

An attempt waits for its time (`progress.next_attempt_at`), unless a record queued behind
the version supersedes it first; hands the version to the destination (a `Ticket`) and waits
for its element's outcome, telling each new announcement that the destination holds it for
the board as a whole (`Held`), and taking it back unsent when a record queued behind
supersedes it. For a board that confirms (LinkedIn), `Submitted(task_id)` is news of its
own (`Accepted`), and the next attempt waits for the task's end: `SUCCEEDED` delivered (with
the job's id), `FAILED` refused with the board's error (or, where its words say so, the job
exists after all, or does not), still in progress past the timeout `Unsure`.

Time the destination held the version for the board (its circuit open, a 429, the budget)
is not charged: it is added to `progress.uncharged_ms`, not to the attempts or the budget's
elapsed time.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from prometheus_client import Counter

from consumers.boards.base import (
    Delivered,
    ElementOutcome,
    JobAction,
    JobExists,
    NoJob,
    Rejected,
    Submitted,
    TaskFailure,
    TaskOutcome,
    TaskState,
    Unsure,
)
from consumers.clock import Clock
from consumers.destination.ticket import Ticket
from consumers.steps import Accepted, Answered, Held, News, Progress, Superseded
from schemas.model import Destination

ATTEMPTS = Counter("jobpost_delivery_attempts_total", "Versions sent to the board", ["destination"])


class Board(Protocol):
    """What a lane needs of its destination (`consumers.destination.shared.SharedDestination`)."""

    def submit(self, action: JobAction) -> Ticket: ...

    def withdraw(self, ticket: Ticket) -> bool: ...

    def task_deadline(self, submitted_at: int) -> int:
        """When a version submitted at `submitted_at` is sent again if its task has not
        ended by then."""

    async def confirm(self, task_id: str, submitted_at: int) -> TaskOutcome: ...


class Lane(Protocol):
    """The posting's lane as its attempts see it (`consumers.lanes`): its state, read and
    written here, never called."""

    ticket: Ticket | None  # the version with the destination now
    superseded: str | None  # why the version is not worth sending any more (a record queued behind)
    changed: asyncio.Event  # set when a record arrives that may supersede the version


class Attempts:
    def __init__(self, destination: Destination, board: Board, clock: Clock) -> None:
        self.destination = destination
        self.board = board
        self.clock = clock
        self._told: dict[Ticket, tuple[str, int | None]] = {}  # the pause last told of each ticket

    async def next(self, action: JobAction, lane: Lane, progress: Progress) -> News:
        """The next news of the action: of its task, of the ticket it has with the
        destination, or of a new attempt."""
        if progress.task_id is not None:
            return Answered(await self._confirmed(progress))
        if lane.ticket is None:
            why = await self._until_due(lane, progress)
            if why is not None:
                return Superseded(why, sent=progress.attempts > 0)
        return await self._news_of(action, lane, progress)

    def abandon(self, lane: Lane) -> None:
        """The lane was cancelled (its partition moved), or failed: take its version back
        from the destination if it is still waiting there."""
        ticket = lane.ticket
        if ticket is not None:
            if not ticket.outcome.done():
                self.board.withdraw(ticket)
            lane.ticket = None
            self._told.pop(ticket, None)

    async def _until_due(self, lane: Lane, progress: Progress) -> str | None:
        """Wait for the attempt's time; why it is superseded, if it is."""
        while (due := progress.next_attempt_at) is not None and due > self.clock.now_ms():
            if (why := lane.superseded) is not None:
                return why
            await self._wait(lane, (due - self.clock.now_ms()) / 1000)
        why = lane.superseded
        if why is None and progress.first_attempt_at is None:
            progress.first_attempt_at = self.clock.now_ms()
        return why

    async def _wait(self, lane: Lane, seconds: float) -> None:
        """Sleep, cut short when a record arrives that may supersede the version."""
        if seconds <= 0:
            return
        lane.changed.clear()
        await self.clock.sleep(seconds, lane.changed)

    async def _news_of(self, action: JobAction, lane: Lane, progress: Progress) -> News:
        """The next news of the version's ticket with the destination (handed to it now if
        it has none): the destination holds it (told once per announcement), it was taken
        back for a record that supersedes it, or its element's outcome."""
        ticket = lane.ticket
        if ticket is None:
            ticket = lane.ticket = self.board.submit(action)
        while not ticket.outcome.done():
            await ticket.notice.wait()
            ticket.notice.clear()
            if ticket.outcome.done():
                break
            why = lane.superseded
            if why is not None and self.board.withdraw(ticket):
                lane.ticket = None
                self._told.pop(ticket, None)
                return Superseded(why, sent=progress.attempts > 0 or ticket.sent_at is not None)
            pause = (ticket.pause_reason, ticket.paused_until)
            if ticket.pause_reason is not None and self._told.get(ticket) != pause:
                self._told[ticket] = (ticket.pause_reason, ticket.paused_until)
                return Held(ticket.pause_reason, ticket.paused_until)
        lane.ticket = None
        self._told.pop(ticket, None)
        progress.uncharged_ms += ticket.held_ms
        progress.attempts += 1
        ATTEMPTS.labels(self.destination).inc()
        outcome = ticket.outcome.result()
        if isinstance(outcome, Submitted):
            progress.task_id, progress.submitted_at = outcome.task_id, self.clock.now_ms()
            return Accepted(self.board.task_deadline(progress.submitted_at))
        return Answered(outcome)

    async def _confirmed(self, progress: Progress) -> ElementOutcome:
        """The end of the task of the version the board accepted; the next version of the
        posting is not sent before it."""
        task_id = progress.task_id
        assert task_id is not None
        submitted_at = progress.submitted_at if progress.submitted_at is not None else self.clock.now_ms()
        ended = await self.board.confirm(task_id, submitted_at)
        progress.task_id = progress.submitted_at = None
        if ended.state == TaskState.SUCCEEDED:
            return Delivered(ended.job_id)
        if ended.state == TaskState.FAILED:
            why = f"{self.destination} task {task_id} failed: {ended.error or 'no reason given'}"
            if ended.failure == TaskFailure.JOB_EXISTS:
                return JobExists(ended.job_id, why)
            if ended.failure == TaskFailure.NO_JOB:
                return NoJob(why)
            return Rejected(why, job_closed=ended.failure == TaskFailure.JOB_CLOSED)
        return Unsure(ended.error or f"{self.destination} task {task_id} did not end in time")
