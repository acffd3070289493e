"""The lane's rules, pure: a version's way as steps (`next_step`: where it starts, what it
asks of the board, and what each piece of news from its attempts makes of it), which record
is work already done, when a redrive request is answered without calling the board, and
when a version taken up gives way to a newer one queued behind it (`conflated`; which record
a later one supersedes once under way is the lane's own question: `consumers.lanes`). What
the board holds, and what to ask of it, is one question to `consumers.job_rules` per step
(`job_step`); the step is written out by `consumers.steps`. News of the job learned
otherwise (its status read back, its expiry, its renewal) takes the same way
(`_job_news_turn`), so the lane stays the only writer of the posting's state.

Every rule reads the posting's DeliveryState as `jobpost.deliveries` has it (the lane's own
writes), never a view that may be behind, so a redrive can never lower what the lane
delivered: `delivered_version` only grows, and a version below one the lane has finished
is never sent again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from consumers.boards.base import Delivered, JobAction, JobExists, NoJob, Operation, Rejected, Unsure
from consumers.items import Item
from consumers.job_rules import JobTerms, job_step
from consumers.retry import RetryPolicy
from consumers.steps import (
    Accepted,
    Answered,
    Held,
    News,
    Progress,
    Step,
    Superseded,
    Turn,
    step_from,
)
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus, Op
from schemas.model import Destination

# A CREATE the board says it holds, then an UPDATE it says it does not (or the other way
# round): after this many such turns in one version's way, the board is not making sense.
MOST_SWITCHES = 3


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
    conflate: bool = False,
) -> Step:
    """The version's next step: where it starts (no `step` yet) or what `news` of its last
    step makes of it. The rules decide alone what they can (`Turn`), ask once what the board
    holds and what to ask of it (`job_rules.job_step`), and have the step written out
    (`steps.step_from`). A redrive gets a fresh budget; a version a restarted consumer finds
    on its way resumes its attempts (`Progress.resume`: a task is polled, never submitted
    again); an element's `Unsure` is retried per `policy` until the budget is spent. With
    `conflate`, a version taken up behind which a newer one already waits gives way to it
    (`conflated`)."""
    terms = terms or JobTerms()
    if item.news is not None and before is None:
        return Step(False, Progress())  # nothing known of the posting here
    before = before or DeliveryState(destination, item.posting_id, DeliveryStatus.PENDING)
    action = step.action if step is not None else None
    outcome = news.outcome if isinstance(news, Answered) else None
    if step is None or news is None:
        news, turn = None, _taken_up(item, before, later, conflate)  # taken up: no news of it yet
    elif item.news is not None and not isinstance(outcome, Unsure):
        turn = _job_news_turn(before, action, news, step.progress)
    elif not isinstance(outcome, Unsure):
        turn = _turn_after(action, news, step.progress)
    else:
        turn = _retried(item, step.progress, outcome, policy, now)
    progress = turn.progress
    spent = turn.status == DeliveryStatus.FAILED and isinstance(outcome, Unsure)
    may_turn = progress.switches <= MOST_SWITCHES
    job = job_step(
        destination,
        item,
        before,
        terms,
        now,
        action=action,
        news=news,
        asks=turn.go,
        may_turn=may_turn,
        spent=spent,
    )
    if job.turned is not None:
        # Not the posting's failure: the attempt is not counted, its wait not charged.
        progress.attempts = max(0, progress.attempts - 1)
        progress.next_attempt_at = now
        turn = Turn(True, replace(progress, next_attempt_at=now), DeliveryStatus.RETRYING, job.turned, now)
    elif job.refused is not None:
        turn = Turn(False, progress, DeliveryStatus.FAILED, job.refused)
    return step_from(destination, item, before, turn, job, now)


def _taken_up(item: Item, state: DeliveryState, later: list[Item], conflate: bool) -> Turn:
    """Whether to attempt the version (or ask about the job), what is counted, why it is
    skipped; a version attempted resumes where the state has it (a redrive afresh)."""
    if item.news is not None:
        return Turn(True, Progress())
    if item.request is not None:
        why = redrive_skipped(item.version, state, later)
        if why is not None:
            return Turn(False, Progress(), counted="superseded", skipped=f"redrive: {why}")
        return Turn(True, Progress())
    if done_already(state, item.version):
        return Turn(False, Progress(), counted="replayed")
    why = conflated(item, state, later) if conflate else None
    if why is not None:
        return Turn(False, Progress(), counted="superseded", skipped=why)
    return Turn(True, Progress(), resumes=True)


def _job_news_turn(before: DeliveryState, action: JobAction | None, news: News, progress: Progress) -> Turn:
    """What the board's answer to an expiry or a renewal asked of it makes of the posting:
    its status (closed by a close) and last error. An unknown answer is `_retried`."""
    if isinstance(news, Superseded):
        return Turn(False, progress)  # a delete queued behind closes it
    if isinstance(news, Held | Accepted):
        return Turn(True, progress)
    outcome = news.outcome
    assert action is not None
    closed = action.operation == Operation.CLOSE and isinstance(outcome, Delivered)
    status = DeliveryStatus.CLOSED if closed else before.status
    error = outcome.reason if isinstance(outcome, Rejected) else before.last_error
    return Turn(False, progress, status, error)


def _turn_after(action: JobAction | None, news: News, progress: Progress) -> Turn:
    """What the news makes of the version: the posting's status, its error, the clock of
    what comes next. A board that says the job exists, or does not, is judged with what it
    holds (`job_rules.job_step`); here it is counted. An unknown answer is `_retried`."""
    if isinstance(news, Superseded):
        return Turn(False, progress, counted="superseded", skipped=news.why)
    if isinstance(news, Held):
        return Turn(True, progress, DeliveryStatus.PAUSED, None, news.until, paused_reason=news.reason)
    if isinstance(news, Accepted):
        return Turn(True, progress, DeliveryStatus.SUBMITTED, None, news.deadline)
    outcome = news.outcome
    if isinstance(outcome, JobExists | NoJob):
        progress.switches += 1
        return Turn(False, progress)
    if isinstance(outcome, Delivered):
        assert action is not None
        closed = action.operation == Operation.CLOSE
        return Turn(False, progress, DeliveryStatus.CLOSED if closed else DeliveryStatus.DELIVERED)
    assert isinstance(outcome, Rejected)
    return Turn(False, progress, DeliveryStatus.FAILED, outcome.reason)


def _retried(item: Item, progress: Progress, outcome: Unsure, policy: RetryPolicy, now: int) -> Turn:
    """An answer that says nothing certain, tried again per `policy` until the budget is
    spent: a version is then dead-lettered; news of the job is given up (nothing
    dead-lettered: no version is refused), to be due again."""
    wait = policy.next_wait(progress.attempts, progress.charged_s(now), outcome.retry_after_s)
    if item.news is not None:
        if wait is None:
            return Turn(False, progress)
        progress.next_attempt_at = now + int(wait * 1000)
        return Turn(True, progress)
    if wait is None:
        return Turn(False, progress, DeliveryStatus.FAILED, f"retries spent: {outcome.reason}")
    clock = now + int(wait * 1000)
    return Turn(
        True, replace(progress, next_attempt_at=clock), DeliveryStatus.RETRYING, outcome.reason, clock
    )


def done_already(state: DeliveryState, version: int) -> bool:
    """A version at or below the delivered one, or one the lane finished (dead-lettered,
    before a restart or a rebalance replayed it)."""
    if state.delivered_version is not None and version <= state.delivered_version:
        return True
    if state.finished_version is not None and version <= state.finished_version:
        return True
    return state.status == DeliveryStatus.FAILED and state.pending_version == version


def conflated(item: Item, state: DeliveryState, later: Iterable[Item]) -> str | None:
    """Why a version taken up gives way to a newer one queued behind it (None: send it).
    A newer version is queued at its turn only when versions came faster than the board
    finished the one before (it is taken up as soon as that one is finished), so while the
    board keeps up nothing is skipped; each PostingUpdate is the whole posting, so the newest
    carries everything the skipped ones did. Never skipped: the CREATED version (a board
    updates only a job it created), a DELETE (nor skipped over: nothing follows it but its
    tombstone), a version already on its way at the board (a restarted consumer polls its
    task; the next is not sent before it ends); a redrive is judged by `redrive_skipped`, and
    a newer version queued behind a DELETE is the lane's `superseded_by`."""
    if item.update is None or item.update.op != Op.UPDATED or item.request is not None:
        return None
    if state.pending_version == item.version and state.status != DeliveryStatus.FAILED:
        return None
    newer = [r for r in later if r.request is None and r.update is not None and r.version > item.version]
    if not newer or any(r.deletes for r in newer):
        return None
    newest = max(r.version for r in newer)
    busy = state.finished_version
    if busy is None:
        return f"superseded by v{newest}, queued behind it"
    return f"superseded by v{newest} while the board was confirming v{busy}"


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
