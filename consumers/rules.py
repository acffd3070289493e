"""The lane's rules, pure: a version's way as steps (`next_step`: where it starts, and what
each piece of news from its attempts makes of it), which record is work already done, which
a later one supersedes, when a redrive request is answered without calling the board, and
what a version's progress (`Progress`) makes of the posting's `DeliveryState`.

Every rule reads the posting's DeliveryState as `jobpost.deliveries` has it (the lane's own
writes), never a view that may be behind, so a redrive can never lower what the lane
delivered: `delivered_version` only grows, and a version below one the lane has finished
is never sent again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from consumers.boards.base import Delivered, ElementOutcome, Rejected, Unsure
from consumers.items import Item
from consumers.retry import RetryPolicy
from schemas.deliveries import OUTCOME_OF_STATUS, delivery_event, delivery_state
from schemas.enums import DeliveryOutcome, Op
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState, DeliveryStatus, Destination, UnresolvedLetter


@dataclass(frozen=True)
class Superseded:
    """News: a record queued behind the version made it pointless; it was not sent (or was
    taken back unsent)."""

    why: str


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
    """What the lane does next with a version (`go`: attempt it, or wait for its task), and
    what is written of it: the deliveries counter's outcome, a dead letter's error, the
    events of the posting's timeline, its new state. Nothing written and `go`: a version
    taken up (or resumed) as it stands."""

    go: bool
    progress: Progress
    counted: str | None = None
    letter: str | None = None
    events: tuple[DeliveryEvent, ...] = ()
    state: DeliveryState | None = None


def next_step(
    destination: Destination,
    item: Item,
    before: DeliveryState | None,
    later: list[Item],
    policy: RetryPolicy,
    now: int,
    *,
    step: Step | None = None,
    news: News | None = None,
) -> Step:
    """The version's next step: where it starts (no `step` yet) or what `news` of its last
    step makes of it. A redrive gets a fresh budget; a version a restarted consumer finds on
    its way resumes its attempts (`Progress.resume`: a task is polled, never submitted
    again); an element's `Unsure` is retried per `policy` until the budget is spent."""
    before = before or DeliveryState(destination, item.posting_id, DeliveryStatus.PENDING)
    status: DeliveryStatus | None = None
    error: str | None = None
    clock: int | None = None
    if step is None or news is None:
        go, progress, counted, skipped = _taken_up(item, before, later, now)
    elif isinstance(news, Superseded):
        go, progress, counted, skipped = False, step.progress, "superseded", news.why
    else:
        progress, skipped = step.progress, None
        status, error, clock = _status_after(item, news, progress, policy, now)
        go = status in (DeliveryStatus.PAUSED, DeliveryStatus.SUBMITTED, DeliveryStatus.RETRYING)
        counted = _COUNTED.get(status)
        if status == DeliveryStatus.RETRYING:
            progress = replace(progress, next_attempt_at=clock)
    state = None
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
    return Step(go, progress, counted, letter, tuple(events), state)


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
    item: Item, news: Held | Accepted | Answered, progress: Progress, policy: RetryPolicy, now: int
) -> tuple[DeliveryStatus, str | None, int | None]:
    """The posting's status after the news, its error, and the clock of what comes next."""
    if isinstance(news, Held):
        return DeliveryStatus.PAUSED, None, news.until
    if isinstance(news, Accepted):
        return DeliveryStatus.SUBMITTED, None, news.deadline
    outcome = news.outcome
    if isinstance(outcome, Delivered):
        return (DeliveryStatus.CLOSED if item.deletes else DeliveryStatus.DELIVERED), None, None
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
) -> DeliveryState:
    """The posting's DeliveryState once `item` came to `status`. A version delivered (or
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
    )
    return replace(state, updated_at=now)


def _clock_of(status: DeliveryStatus, progress: Progress, given: int | None) -> int | None:
    if status == DeliveryStatus.RETRYING:
        return progress.next_attempt_at
    if status in (DeliveryStatus.SUBMITTED, DeliveryStatus.PAUSED):
        return given
    return None
