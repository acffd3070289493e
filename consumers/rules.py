"""The lane's rules, pure: a version's way as steps (`next_step`: where it starts, what it
asks of the board, and what each piece of news from its attempts makes of it), which record
is work already done, which a later one supersedes, when a redrive request is answered
without calling the board, and what a version's progress (`Progress`) makes of the posting's
`DeliveryState`. What is asked of the board, and what the board's answers make of the job it
holds, are `consumers.job_rules`; news of the job learned otherwise (its status read back,
its expiry, its renewal) takes its own way here too (`_news_step`), so the lane stays the
only writer of the posting's state.

Every rule reads the posting's DeliveryState as `jobpost.deliveries` has it (the lane's own
writes), never a view that may be behind, so a redrive can never lower what the lane
delivered: `delivered_version` only grows, and a version below one the lane has finished
is never sent again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from consumers.boards.base import (
    Delivered,
    ElementOutcome,
    JobAction,
    JobExists,
    NoJob,
    Operation,
    Rejected,
    Unsure,
)
from consumers.items import Item, NewsKind
from consumers.job_rules import (
    JobTerms,
    action_for,
    answered,
    changed,
    job_of,
    listed,
    maybe_held,
    submitted,
)
from consumers.retry import RetryPolicy
from schemas.deliveries import OUTCOME_OF_STATUS, delivery_event, delivery_state
from schemas.enums import DeliveryOutcome, Op
from schemas.events import DeliveryEvent
from schemas.model import BoardJob, DeliveryState, DeliveryStatus, Destination, UnresolvedLetter

# A CREATE the board says it holds, then an UPDATE it says it does not (or the other way
# round): after this many such turns in one version's way, the board is not making sense.
MOST_SWITCHES = 3


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


def next_step(
    destination: Destination,
    item: Item,
    before: DeliveryState | None,
    later: list[Item],
    policy: RetryPolicy,
    now: int,
    *,
    terms: JobTerms | None = None,
    step: Step | None = None,
    news: News | None = None,
) -> Step:
    """The version's next step: where it starts (no `step` yet) or what `news` of its last
    step makes of it. A redrive gets a fresh budget; a version a restarted consumer finds on
    its way resumes its attempts (`Progress.resume`: a task is polled, never submitted
    again); an element's `Unsure` is retried per `policy` until the budget is spent. What is
    asked of the board follows from what it holds (`job_rules.action_for`)."""
    terms = terms or JobTerms()
    if item.news is not None:
        return _news_step(destination, item, before, policy, now, terms, step, news)
    before = before or DeliveryState(destination, item.posting_id, DeliveryStatus.PENDING)
    job = job_of(before)
    status: DeliveryStatus | None = None
    error: str | None = None
    clock: int | None = None
    action = step.action if step is not None else None
    after = job
    if step is None or news is None:
        go, progress, counted, skipped = _taken_up(item, before, later, now)
        if go:
            action = action_for(destination, item, job, terms)
            if action is None:
                return _nothing_to_ask(destination, item, before, progress, now)
    elif isinstance(news, Superseded):
        go, progress, counted, skipped = False, step.progress, "superseded", news.why
        if news.sent and action is not None:
            after = maybe_held(job, action)
    else:
        progress, skipped = step.progress, None
        assert action is not None
        outcome = news.outcome if isinstance(news, Answered) else None
        if isinstance(outcome, JobExists | NoJob):
            after = answered(job, action, outcome, now, terms, expiring=False)
            progress.switches += 1
            switched = action_for(destination, item, after, terms)
            if progress.switches <= MOST_SWITCHES and switched is not None:
                action = switched
                # Not the posting's failure: the attempt is not counted, its wait not charged.
                progress.attempts = max(0, progress.attempts - 1)
                progress.next_attempt_at = now
                status, error, clock = DeliveryStatus.RETRYING, _carried_on(destination, outcome, action), now
            else:
                why = f"{destination} answers that the job both exists and does not: {outcome.reason}"
                news = Answered(Rejected(why))
        if status is None:
            status, error, clock = _status_after(action, news, progress, policy, now)
            after = _job_after(job, action, news, now, terms)
            if status == DeliveryStatus.FAILED and isinstance(outcome, Unsure):
                after = maybe_held(after, action)  # its CREATE may have reached the board
        go = status in (DeliveryStatus.PAUSED, DeliveryStatus.SUBMITTED, DeliveryStatus.RETRYING)
        counted = _COUNTED.get(status)
        if status == DeliveryStatus.RETRYING:
            progress = replace(progress, next_attempt_at=clock)
    state = None
    if status is None and after != job:
        state = replace(before, job=after, updated_at=now)
    if status is not None:
        paused_reason = news.reason if isinstance(news, Held) else None
        state = next_state(
            destination,
            item,
            before,
            status,
            progress,
            now=now,
            error=error,
            paused_reason=paused_reason,
            next_attempt_at=clock,
            job=after,
        )
    events = []
    if skipped is not None:
        events.append(
            delivery_event(
                destination,
                item.posting_id,
                item.version,
                DeliveryOutcome.SKIPPED,
                progress.attempts,
                error=skipped,
                at=now,
                request_id=item.request_id,
            )
        )
    if state is not None:
        events.append(
            delivery_event(
                destination,
                item.posting_id,
                item.version,
                OUTCOME_OF_STATUS[state.status],
                progress.attempts,
                error=state.paused_reason if state.status == DeliveryStatus.PAUSED else error,
                next_attempt_at=state.next_attempt_at,
                at=now,
                task_id=state.task_id,
                request_id=item.request_id,
            )
        )
    letter = error if status == DeliveryStatus.FAILED else None
    listing = after if state is not None and changed(job, after) else None
    return Step(go, progress, counted, letter, tuple(events), state, action, listing)


def _carried_on(destination: Destination, outcome: JobExists | NoJob, action: JobAction | None) -> str:
    operation = action.operation if action is not None else "nothing"
    if isinstance(outcome, JobExists):
        return f"{destination} holds the job already ({outcome.job_id}): the version goes as an {operation}"
    return f"{destination} holds no such job: the version goes as a {operation}"


def _job_after(
    job: BoardJob, action: JobAction, news: Held | Accepted | Answered, now: int, terms: JobTerms
) -> BoardJob:
    if isinstance(news, Accepted):
        return submitted(job, action, now)
    if isinstance(news, Answered):
        return answered(job, action, news.outcome, now, terms, expiring=False)
    return job


def _nothing_to_ask(
    destination: Destination, item: Item, before: DeliveryState, progress: Progress, now: int
) -> Step:
    """A version that needs no call: a delete, or one whose boards leave this board out, of a
    posting the board holds nothing open for. Done: a delete is closed, the other
    delivered (the board never hears of it, as the timeline says)."""
    update = item.update
    assert update is not None
    closing = update.op == Op.DELETED
    status = DeliveryStatus.CLOSED if closing else DeliveryStatus.DELIVERED
    state = next_state(destination, item, before, status, progress, now=now, job=job_of(before))
    outcome, why = DeliveryOutcome.CLOSED, None
    if not closing:
        outcome, why = DeliveryOutcome.SKIPPED, f"not sent: the posting's boards leave {destination} out"
    event = delivery_event(
        destination, item.posting_id, item.version, outcome, 0, error=why, at=now, request_id=item.request_id
    )
    return Step(False, progress, _COUNTED[status], None, (event,), state)


def _news_step(
    destination: Destination,
    item: Item,
    before: DeliveryState | None,
    policy: RetryPolicy,
    now: int,
    terms: JobTerms,
    step: Step | None,
    news: News | None,
) -> Step:
    """News of the posting's job: its status read back (written when it changed), or its
    expiry or renewal, asked of the board and retried like a version (nothing dead-lettered:
    no version is refused; given up after the budget, to be due again)."""
    assert item.news is not None
    if before is None:
        return Step(False, Progress())  # nothing known of the posting here
    job = job_of(before)
    if item.news.kind == NewsKind.STATUS:
        assert item.news.listing is not None
        after = listed(job, item.news.listing, now, terms)
        if after == job:
            return Step(False, Progress())
        state = replace(before, job=after, updated_at=now)
        return Step(False, Progress(), state=state, listing=after if changed(job, after) else None)
    if step is None or news is None:
        action = action_for(destination, item, job, terms)
        return Step(action is not None, Progress(), action=action)
    progress, action = step.progress, step.action
    assert action is not None
    if isinstance(news, Superseded):
        return Step(False, progress)  # a delete queued behind closes it
    if isinstance(news, Held | Accepted):
        return Step(True, progress, action=action)
    outcome = news.outcome
    if isinstance(outcome, Unsure):
        wait = policy.next_wait(progress.attempts, progress.charged_s(now), outcome.retry_after_s)
        if wait is None:
            return Step(False, progress)
        progress.next_attempt_at = now + int(wait * 1000)
        return Step(True, progress, action=action)
    expiring = item.news.kind == NewsKind.EXPIRE
    after = answered(job, action, outcome, now, terms, expiring=expiring)
    closed = action.operation == Operation.CLOSE and isinstance(outcome, Delivered)
    state = replace(
        before,
        job=after,
        status=DeliveryStatus.CLOSED if closed else before.status,
        last_error=outcome.reason if isinstance(outcome, Rejected) else before.last_error,
        updated_at=now,
    )
    return Step(False, progress, state=state, listing=after if changed(job, after) else None)


_COUNTED = {
    DeliveryStatus.DELIVERED: "delivered",
    DeliveryStatus.CLOSED: "delivered",
    DeliveryStatus.FAILED: "dead_lettered",
}


def _taken_up(
    item: Item, state: DeliveryState, later: list[Item], now: int
) -> tuple[bool, Progress, str | None, str | None]:
    """Whether to attempt the version, its progress so far, what is counted, why it is
    skipped."""
    if item.request is not None:
        why = redrive_skipped(item.version, state, later)
        if why is not None:
            return False, Progress(), "superseded", f"redrive: {why}"
        return True, Progress(), None, None
    if done_already(state, item.version):
        return False, Progress(), "replayed", None
    return True, Progress.resume(state, item.version, now), None, None


def _status_after(
    action: JobAction, news: Held | Accepted | Answered, progress: Progress, policy: RetryPolicy, now: int
) -> tuple[DeliveryStatus, str | None, int | None]:
    """The posting's status after the news, its error, and the clock of what comes next."""
    if isinstance(news, Held):
        return DeliveryStatus.PAUSED, None, news.until
    if isinstance(news, Accepted):
        return DeliveryStatus.SUBMITTED, None, news.deadline
    outcome = news.outcome
    if isinstance(outcome, Delivered):
        closed = action.operation == Operation.CLOSE
        return (DeliveryStatus.CLOSED if closed else DeliveryStatus.DELIVERED), None, None
    if isinstance(outcome, Rejected):
        return DeliveryStatus.FAILED, outcome.reason, None
    assert isinstance(outcome, Unsure)
    wait = policy.next_wait(progress.attempts, progress.charged_s(now), outcome.retry_after_s)
    if wait is None:
        return DeliveryStatus.FAILED, f"retries spent: {outcome.reason}", None
    return DeliveryStatus.RETRYING, outcome.reason, now + int(wait * 1000)


def done_already(state: DeliveryState, version: int) -> bool:
    """A version at or below the delivered one, or one the lane finished (dead-lettered,
    before a restart or a rebalance replayed it)."""
    if state.delivered_version is not None and version <= state.delivered_version:
        return True
    if state.finished_version is not None and version <= state.finished_version:
        return True
    return state.status == DeliveryStatus.FAILED and state.pending_version == version


def superseded_by(item: Item, later: Iterable[Item], conflate: bool) -> int | None:
    """The newest later version that makes `item` pointless to send: a DELETE of the
    posting always (the board ends with the posting closed), any newer version when
    conflating (each PostingUpdate is a full snapshot) or when `item` is a redrive. A
    DELETED version is never superseded, nor is the CREATED one: a board updates and
    closes only a job it created (LinkedIn refuses the UPDATE or CLOSE of a job it never
    created, which dead-lettered a posting created and deleted while its consumer was
    down, found by `make chaos`). None: send it."""
    created = item.update is not None and item.update.op == Op.CREATED and item.request is None
    if item.deletes or created:
        return None
    newer = conflate or item.request is not None
    versions = [
        r.version
        for r in later
        if r.request is None and r.update is not None and r.version > item.version and (newer or r.deletes)
    ]
    return max(versions) if versions else None


def redrive_skipped(version: int, state: DeliveryState, later: Iterable[Item]) -> str | None:
    """Why a redrive of `version` is answered without calling the board (None: attempt it
    once more): the board has it or a newer one, the lane finished or holds a newer one, or
    a newer one is queued behind the request."""
    delivered = state.delivered_version
    if delivered is not None and version <= delivered:
        return f"superseded: version {delivered} is delivered"
    finished = state.finished_version
    if finished is not None and version < finished:
        return f"superseded: the lane finished version {finished}"
    pending = state.pending_version
    if pending is not None and version < pending and state.status != DeliveryStatus.FAILED:
        return f"superseded: version {pending} is on its way"
    queued = [r.version for r in later if r.request is None and r.version > version]
    if queued:
        return f"superseded by version {max(queued)}, queued"
    return None


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
