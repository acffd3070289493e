"""A version's way in values, and each step written out: the news its attempts bring
(`News`), its attempts so far (`Progress`), what the lane's rules made of the news (`Turn`)
and of the job at the board (`JobStep`), and the step the lane takes and writes down
(`Step`). `step_from` turns the rules' decisions into what is written: the posting's new
`DeliveryState` (`next_state`), the events of its timeline, a dead letter's error, the job's
new status for its employer.

The rules decide (`consumers.rules`, `consumers.job_rules`); nothing here decides anything but
how a decision is written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from consumers.boards.base import ElementOutcome, JobAction
from consumers.items import Item
from schemas.deliveries import (
    OUTCOME_OF_STATUS,
    BoardJob,
    DeliveryState,
    UnresolvedLetter,
    delivery_event,
    delivery_state,
)
from schemas.enums import DeliveryOutcome, DeliveryStatus
from schemas.events import DeliveryEvent
from schemas.model import Destination


@dataclass(frozen=True)
class Superseded:
    """News: a record queued behind the version made it pointless; it was not sent again
    (or was taken back unsent). `sent`: an earlier attempt of it reached the board, or may
    have (a call whose answer was lost)."""

    why: str
    sent: bool = False


@dataclass(frozen=True)
class Held:
    """News: the destination holds the version for the board as a whole, which is tried
    next `until` (epoch ms; None: not known)."""

    reason: str
    until: int | None


@dataclass(frozen=True)
class Accepted:
    """News: the board took the version as a task (`progress.task_id`); it is sent again at
    `deadline` unless the task ended."""

    deadline: int


@dataclass(frozen=True)
class Answered:
    """News: what the board made of the version (for a board that confirms, its task's end)."""

    outcome: ElementOutcome


News = Superseded | Held | Accepted | Answered


@dataclass
class Progress:
    """One version's attempts so far: what its retry budget has spent."""

    attempts: int = 0
    first_attempt_at: int | None = None
    next_attempt_at: int | None = None
    uncharged_ms: int = 0  # waited for the board as a whole: not charged to the budget
    task_id: str | None = None
    submitted_at: int | None = None
    switches: int = 0  # times the board said the job exists, or does not, in this way
    redrive_told: bool = False  # a redrive's event for the employer is out

    @classmethod
    def resume(cls, state: DeliveryState, version: int, now: int) -> Progress:
        """Where a restarted (or rebalanced) consumer takes a version up: the same attempt
        count, first attempt and uncharged time; a task submitted before is polled, never
        submitted again."""
        ours = state.pending_version == version
        if not ours or state.status not in (
            DeliveryStatus.RETRYING,
            DeliveryStatus.SUBMITTED,
            DeliveryStatus.PAUSED,
        ):
            return cls()
        uncharged = state.uncharged_ms
        if state.status == DeliveryStatus.PAUSED and state.paused_since is not None:
            uncharged += max(0, now - state.paused_since)
        submitted = state.status == DeliveryStatus.SUBMITTED
        return cls(
            attempts=state.attempts,
            first_attempt_at=state.first_attempt_at,
            next_attempt_at=state.next_attempt_at if state.status == DeliveryStatus.RETRYING else None,
            uncharged_ms=uncharged,
            task_id=state.task_id if submitted else None,
            submitted_at=state.submitted_at if submitted else None,
        )

    def charged_s(self, now: int) -> float:
        """Seconds of the retry budget spent: since the first attempt, less the waits for
        the board as a whole."""
        first = self.first_attempt_at if self.first_attempt_at is not None else now
        return max(0, now - first - self.uncharged_ms) / 1000


COUNTED = {
    DeliveryStatus.DELIVERED: "delivered",
    DeliveryStatus.CLOSED: "delivered",
    DeliveryStatus.FAILED: "dead_lettered",
}


@dataclass(frozen=True)
class Turn:
    """What the rules made of a version's news: whether it goes on (`go`), the status it
    comes to (None: no status written), with its error and the clock of what comes next,
    why the destination holds it, what the deliveries counter counts of a version that
    comes to no status (`counted`: superseded, replayed), why it is skipped."""

    go: bool
    progress: Progress
    status: DeliveryStatus | None = None
    error: str | None = None
    clock: int | None = None
    paused_reason: str | None = None
    counted: str | None = None
    skipped: str | None = None
    resumes: bool = False  # taken up as the posting's state has it (`Progress.resume`)

    @property
    def counts(self) -> str | None:
        """What the deliveries counter counts of this turn: a status's own outcome."""
        return self.counted if self.status is None else COUNTED.get(self.status)


@dataclass(frozen=True)
class JobStep:
    """What the board holds once a step's news is taken in (`job`; `was`: before it), what
    to ask of it next (`action`; None: nothing), the job when its status as its employer sees
    it changed (`listing`), and, for a board that said the job exists or does not, why the
    version goes again as `action` (`turned`) or the refusal it comes to (`refused`)."""

    was: BoardJob
    job: BoardJob
    action: JobAction | None = None
    listing: BoardJob | None = None
    turned: str | None = None
    refused: str | None = None


@dataclass(frozen=True)
class Step:
    """What the lane does next with a version (`go`: attempt `action`, or wait for its
    task), and what is written of it: the deliveries counter's outcome, a dead letter's
    error, the events of the posting's timeline, its new state, and the job's new status
    when it changed (`listing`: an event for the employer). Nothing written and `go`: a
    version taken up (or resumed) as it stands."""

    go: bool
    progress: Progress
    counted: str | None = None
    letter: str | None = None
    events: tuple[DeliveryEvent, ...] = ()
    state: DeliveryState | None = None
    action: JobAction | None = None
    listing: BoardJob | None = None


def step_from(
    destination: Destination, item: Item, before: DeliveryState, turn: Turn, job: JobStep, now: int
) -> Step:
    """The step the rules decided (`turn`) with the job it comes to (`job`), written out: the
    posting's new state (a status, or only a job that moved), the events of its timeline (a
    skip's, the new state's), a dead letter's error. A version taken up that the board needs
    no call for is done (`_done_without_call`); news of the job is written as the job's
    (`_job_news_written`)."""
    if item.news is not None:
        return _job_news_written(before, turn, job, now)
    progress = Progress.resume(before, item.version, now) if turn.resumes else turn.progress
    done = turn.go and job.action is None
    if done:
        turn = _done_without_call(destination, item, progress)
    state = None
    if turn.status is None and job.job != job.was:
        state = replace(before, job=job.job, updated_at=now)
    if turn.status is not None:
        state = next_state(
            destination,
            item,
            before,
            turn.status,
            progress,
            now=now,
            error=turn.error,
            paused_reason=turn.paused_reason,
            next_attempt_at=turn.clock,
            job=job.job,
        )
    told: list[tuple[DeliveryOutcome, str | None, int | None, str | None]] = []
    if turn.skipped is not None:
        told.append((DeliveryOutcome.SKIPPED, turn.skipped, None, None))
    if state is not None and not (done and turn.skipped is not None):
        error = state.paused_reason if state.status == DeliveryStatus.PAUSED else turn.error
        told.append((OUTCOME_OF_STATUS[state.status], error, state.next_attempt_at, state.task_id))
    attempts = 0 if done else progress.attempts  # a version done without a call made none
    events = tuple(
        delivery_event(
            destination,
            item.posting_id,
            item.version,
            outcome,
            attempts,
            error=error,
            next_attempt_at=next_attempt_at,
            at=now,
            task_id=task_id,
            request_id=item.request_id,
        )
        for outcome, error, next_attempt_at, task_id in told
    )
    letter = turn.error if turn.status == DeliveryStatus.FAILED else None
    listing = job.listing if state is not None else None
    return Step(turn.go, progress, turn.counts, letter, events, state, job.action, listing)


def _done_without_call(destination: Destination, item: Item, progress: Progress) -> Turn:
    """A version that needs no call: a delete, or one whose boards leave this board out, of a
    posting the board holds nothing open for. Done: a delete is closed, the other
    delivered (the board never hears of it, as the timeline says)."""
    if item.deletes:
        return Turn(False, progress, DeliveryStatus.CLOSED)
    why = f"not sent: the posting's boards leave {destination} out"
    return Turn(False, progress, DeliveryStatus.DELIVERED, skipped=why)


def _job_news_written(before: DeliveryState, turn: Turn, job: JobStep, now: int) -> Step:
    """News of the job, written as the job's: the state when the board answered (its
    status, `turn.status`, and last error, `turn.error`) or when the job moved, no event of
    a version. The news goes on while there is something to ask of the board."""
    go = turn.go and job.action is not None
    state = None
    if turn.status is not None:
        state = replace(before, job=job.job, status=turn.status, last_error=turn.error, updated_at=now)
    elif job.job != job.was:
        state = replace(before, job=job.job, updated_at=now)
    listing = job.listing if state is not None else None
    return Step(go, turn.progress, state=state, action=job.action if go else None, listing=listing)


def next_state(
    destination: Destination,
    item: Item,
    before: DeliveryState | None,
    status: DeliveryStatus,
    progress: Progress,
    *,
    now: int,
    error: str | None = None,
    paused_reason: str | None = None,
    next_attempt_at: int | None = None,
    job: BoardJob | None = None,
) -> DeliveryState:
    """The posting's DeliveryState once `item` came to `status` (`job`: what the board
    holds now; None keeps what the state had). A version delivered (or
    closed) resolves every dead letter at or below it, and `delivered_version` never
    decreases; a dead letter is remembered until a version resolves it. Every state that
    waits has a clock in `next_attempt_at`: retrying, the next attempt (`progress`);
    submitted, when the version is sent again unless its task ended; paused, when the
    board is tried next (`next_attempt_at`, the latter two)."""
    previous = before or DeliveryState(destination, item.posting_id, DeliveryStatus.PENDING)
    delivered, finished = previous.delivered_version, previous.finished_version
    letters = previous.unresolved_letters
    done = status in (DeliveryStatus.DELIVERED, DeliveryStatus.CLOSED)
    if done:
        delivered = item.version if delivered is None else max(delivered, item.version)
        letters = tuple(letter for letter in letters if letter.version > delivered)
    if done or status == DeliveryStatus.FAILED:
        finished = item.version if finished is None else max(finished, item.version)
    if status == DeliveryStatus.FAILED and all(letter.version != item.version for letter in letters):
        # A letter redriven and refused again keeps its first time: the oldest one expires first.
        letters = (*letters, UnresolvedLetter(item.version, now))
    clock = _clock_of(status, progress, next_attempt_at)
    state = delivery_state(
        destination,
        item.posting_id,
        status=status,
        delivered_version=delivered,
        pending_version=None if done else item.version,
        attempts=progress.attempts,
        first_attempt_at=progress.first_attempt_at,
        next_attempt_at=clock,
        last_error=error,
        task_id=progress.task_id if status == DeliveryStatus.SUBMITTED else None,
        submitted_at=progress.submitted_at if status == DeliveryStatus.SUBMITTED else None,
        uncharged_ms=progress.uncharged_ms,
        paused_since=now if status == DeliveryStatus.PAUSED else None,
        paused_reason=paused_reason if status == DeliveryStatus.PAUSED else None,
        finished_version=finished,
        unresolved_letters=letters,
        job=job if job is not None else previous.job,
    )
    return replace(state, updated_at=now)


def _clock_of(status: DeliveryStatus, progress: Progress, given: int | None) -> int | None:
    if status == DeliveryStatus.RETRYING:
        return progress.next_attempt_at
    if status in (DeliveryStatus.SUBMITTED, DeliveryStatus.PAUSED):
        return given
    return None
