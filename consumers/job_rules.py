"""What the board holds for a posting, and what to ask of it, pure (DESIGN.md, "The job at the
board is a thing we track").

Per posting and board the lane keeps a `BoardJob` in the posting's DeliveryState: whether the
board holds a job (none yet, open, closed), the board's id and page for it, its status in the
board's terms, its first listing date, when the board ends it unless renewed, when the
posting expires. What is sent follows from it, never from the version number:

- a version that targets the board and is not a delete: CREATE until the board holds the job
  open, UPDATE after (Indeed upserts either way); the first listing date stays the first;
- a delete, a version whose `boards` leave the board out, the posting's expiry: CLOSE what the
  board holds open, nothing when it holds nothing;
- the board's lifetime about to lapse while the posting is open and not past its expiry:
  RENEW (a board that `renews`: LinkedIn).

`job_step` is the one question the lane's rules ask here, once per step: what the board holds
once the step's news is taken in, and what to ask of it next.

What the board answers moves the job: a CREATE the board refused leaves nothing held (the
next, corrected, version is a CREATE again); a CREATE the board says it holds already makes
the job open (`JobExists`: the same content goes as an UPDATE); an UPDATE of a job it does
not hold makes it none (`NoJob`: a CREATE next); an upsert the board applied as a new job
(Indeed, after the employer's `sourceName` changed) holds the new id, and the jobs it replaced
are kept (`replaced_ids`) until an answer says they are expired: every action carries them.
What the board's status read back says (`BoardListing`) moves the job's status: received, live
(with its page), closed by the board or rejected (with the board's reason), expired.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from consumers.boards.base import (
    BoardListing,
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
from consumers.steps import Accepted, Answered, JobStep, News, Superseded
from schemas import codec
from schemas.codec import SerializationError
from schemas.deliveries import BoardJob, DeliveryState
from schemas.enums import JobHeld, ListingStatus, Op
from schemas.model import Destination, PostingUpdate

# The board has decided nothing final about these: their status is read back.
WATCHED = (ListingStatus.SUBMITTED, ListingStatus.RECEIVED, ListingStatus.LIVE)
# The board's own final words, which a close of ours that found nothing to close keeps.
BOARDS_OWN = (ListingStatus.CLOSED_BY_BOARD, ListingStatus.EXPIRED, ListingStatus.REJECTED)
EXPIRED_REASON = "the posting's expiry date came: closed at the board"


@dataclass(frozen=True)
class JobTerms:
    """How a destination's jobs are kept: whether the job's content is kept to restate it
    (LinkedIn's RENEW and CLOSE), the board's lifetime of a job and what a renewal adds
    (LinkedIn: 180 and 30 days; None: jobs live until closed), how long ahead of the end it
    is renewed, and how often a job's status is read back (not yet live; live)."""

    restates: bool = False
    lifetime_ms: int | None = None
    renewal_ms: int | None = None
    renew_ahead_ms: int = 7 * 86_400_000
    check_received_ms: int = 60_000
    check_live_ms: int = 3_600_000


@dataclass(frozen=True)
class Due:
    """When something is due for a job, epoch ms (None: nothing)."""

    check: int | None = None  # read the board's status back
    expire: int | None = None  # close it: the posting expires
    renew: int | None = None  # renew it: the board's lifetime ends soon


def job_step(
    destination: Destination,
    item: Item,
    before: DeliveryState,
    terms: JobTerms,
    now: int,
    *,
    action: JobAction | None = None,
    news: News | None = None,
    asks: bool = True,
    may_turn: bool = True,
    spent: bool = False,
) -> JobStep:
    """The job once the step's `news` is taken in, and what to ask of the board next (`action`:
    the step's own). Taking a version up (no news), what to ask is what the board holds
    calls for, when the version `asks` at all. A board that says the job exists, or does not,
    turns the version into the operation that calls for (`turned`) while the lane `may_turn`;
    otherwise that answer is a refusal (`refused`). A CREATE whose answer never came and is
    not sent again (superseded after it may have reached the board, or its retries `spent`
    on an unknown answer) leaves the job taken as held."""
    job = job_of(before)
    if item.news is not None:
        return _job_news_step(destination, item, job, terms, now, action, news)
    if news is None:
        return JobStep(job, job, action_for(destination, item, job, terms) if asks else action)
    if isinstance(news, Superseded):
        after = maybe_held(job, action) if news.sent and action is not None else job
        return _moved(job, after, action)
    assert action is not None
    if isinstance(news, Accepted):
        return _moved(job, submitted(job, action, now), action)
    if not isinstance(news, Answered):
        return _moved(job, job, action)  # held for the board as a whole: nothing learned
    outcome = news.outcome
    if isinstance(outcome, JobExists | NoJob):
        after = answered(job, action, outcome, now, terms, expiring=False)
        switched = action_for(destination, item, after, terms)
        if may_turn and switched is not None:
            turned = _carried_on(destination, outcome, switched)
            return JobStep(job, after, switched, _listing(job, after), turned=turned)
        why = f"{destination} answers that the job both exists and does not: {outcome.reason}"
        after = answered(job, action, Rejected(why), now, terms, expiring=False)
        return JobStep(job, after, action, _listing(job, after), refused=why)
    after = answered(job, action, outcome, now, terms, expiring=False)
    if spent:
        after = maybe_held(after, action)  # its CREATE may have reached the board
    return _moved(job, after, action)


def _job_news_step(
    destination: Destination,
    item: Item,
    job: BoardJob,
    terms: JobTerms,
    now: int,
    action: JobAction | None,
    news: News | None,
) -> JobStep:
    """News of the job the consumer learned itself: its status read back, or (asked of the
    board) its expiry or renewal and the board's answer to it."""
    assert item.news is not None
    if item.news.kind == NewsKind.STATUS:
        assert item.news.listing is not None
        return _moved(job, listed(job, item.news.listing, now, terms), None)
    if news is None:
        return JobStep(job, job, action_for(destination, item, job, terms))
    if not isinstance(news, Answered) or isinstance(news.outcome, Unsure):
        return JobStep(job, job, action)  # no answer yet: the lane retries it, nothing learned
    assert action is not None
    expiring = item.news.kind == NewsKind.EXPIRE
    return _moved(job, answered(job, action, news.outcome, now, terms, expiring=expiring), action)


def _moved(job: BoardJob, after: BoardJob, action: JobAction | None) -> JobStep:
    return JobStep(job, after, action, _listing(job, after))


def _listing(job: BoardJob, after: BoardJob) -> BoardJob | None:
    return after if changed(job, after) else None


def _carried_on(destination: Destination, outcome: JobExists | NoJob, action: JobAction) -> str:
    operation = action.operation
    if isinstance(outcome, JobExists):
        return f"{destination} holds the job already ({outcome.job_id}): the version goes as an {operation}"
    return f"{destination} holds no such job: the version goes as a {operation}"


def job_of(state: DeliveryState | None) -> BoardJob:
    """The job as the state knows it (a state from before v3 derives what is held)."""
    if state is None:
        return BoardJob()
    if state.job is not None:
        return state.job
    return BoardJob(held=state.held)


def targets(destination: Destination, update: PostingUpdate) -> bool:
    """Whether the version is for this board: a posting whose `boards` leave it out is never
    sent there."""
    return destination in update.posting.boards


def action_for(destination: Destination, item: Item, job: BoardJob, terms: JobTerms) -> JobAction | None:
    """What to ask of the board for `item`, given what it holds (None: nothing to call)."""
    if item.news is not None:
        return _for_news(item, job, terms)
    update = item.update
    assert update is not None
    if update.op == Op.DELETED or not targets(destination, update):
        return _close(item.posting_id, update.employer, job, terms, update)
    # An open job: an UPDATE, listed since its first listing. Nothing held, or a closed job: a
    # CREATE (Indeed reopens a job it expired, within its 30 days with the same id; LinkedIn
    # says whether it holds it), listed from now on.
    held = job.held == JobHeld.OPEN
    operation = Operation.UPDATE if held else Operation.CREATE
    listed_at = job.listed_at if held and job.listed_at is not None else update.last_update_time_millis
    return JobAction(
        operation, item.posting_id, update.employer, update, job.job_id, listed_at, job.replaced_ids
    )


def _for_news(item: Item, job: BoardJob, terms: JobTerms) -> JobAction | None:
    assert item.news is not None
    kind = item.news.kind
    if kind == NewsKind.EXPIRE:
        return _close(item.posting_id, job.employer, job, terms, None)
    if kind == NewsKind.RENEW and renewable(job, terms):
        content = held_content(job)
        assert content is not None  # renewable() checked it
        return JobAction(
            Operation.RENEW, item.posting_id, content.employer, content, job.job_id, job.listed_at
        )
    return None


def _close(
    posting_id: str, employer: str | None, job: BoardJob, terms: JobTerms, given: PostingUpdate | None
) -> JobAction | None:
    """A CLOSE of what the board holds open; for a board that restates the job, with the
    content it holds (else the version at hand)."""
    if job.held != JobHeld.OPEN:
        return None
    content = (held_content(job) if terms.restates else None) or given
    who = employer or (content.employer if content is not None else None)
    if who is None or (content is None and job.job_id is None):
        return None  # a job of a state from before v3, with nothing to close it by
    return JobAction(Operation.CLOSE, posting_id, who, content, job.job_id, job.listed_at, job.replaced_ids)


def held_content(job: BoardJob) -> PostingUpdate | None:
    """The version whose content the board holds, when kept."""
    if job.content is None:
        return None
    try:
        return codec.posting_updates().decode(job.content)
    except SerializationError:
        return None


def renewable(job: BoardJob, terms: JobTerms) -> bool:
    """An open job the board will end unless renewed, whose posting has not expired before
    then, with its content kept to restate."""
    if terms.renewal_ms is None or job.held != JobHeld.OPEN or job.lifetime_ends_at is None:
        return False
    if job.status not in (ListingStatus.RECEIVED, ListingStatus.LIVE) or job.content is None:
        return False
    return job.expires_at is None or job.expires_at > job.lifetime_ends_at


def due(job: BoardJob, terms: JobTerms) -> Due:
    """When the board's status is read back, the posting's expiry closes the job, the job is
    renewed."""
    if job.held != JobHeld.OPEN:
        return Due()
    check = job.next_check_at if job.status in WATCHED else None
    renew = job.lifetime_ends_at - terms.renew_ahead_ms if renewable(job, terms) else None  # type: ignore[operator]
    return Due(check, job.expires_at, renew)


def submitted(job: BoardJob, action: JobAction, now: int) -> BoardJob:
    """A board that confirms later took the action: a CREATE is submitted."""
    if action.operation != Operation.CREATE or job.held == JobHeld.OPEN:
        return job
    return _status(replace(job, employer=action.employer), ListingStatus.SUBMITTED, None, now)


def answered(
    job: BoardJob, action: JobAction, outcome: ElementOutcome, now: int, terms: JobTerms, *, expiring: bool
) -> BoardJob:
    """The job once the board answered `action` with `outcome` (`expiring`: the close is the
    posting's expiry's)."""
    job = replace(job, employer=action.employer)
    if isinstance(outcome, JobExists):
        return replace(job, held=JobHeld.OPEN, job_id=outcome.job_id or job.job_id)
    if isinstance(outcome, NoJob):
        return replace(job, held=JobHeld.NONE, job_id=None, url=None)
    if isinstance(outcome, Rejected | Unsure) and outcome.job_id is not None:
        # Applied as a new job, the expiry of the one it replaced not done: kept to expire.
        return _applied(job, action, Delivered(outcome.job_id), now, terms, outcome.unexpired)
    if isinstance(outcome, Rejected):
        return _refused(job, action, outcome, now)
    if not isinstance(outcome, Delivered):
        return job  # unknown: nothing learned
    if action.operation == Operation.CLOSE:
        if outcome.gone and job.status in BOARDS_OWN:
            closed = job
        elif expiring:
            closed = _status(job, ListingStatus.EXPIRED, EXPIRED_REASON, now)
        else:
            closed = _status(job, ListingStatus.CLOSED, None, now)
        return replace(closed, held=JobHeld.CLOSED, content=None, next_check_at=None, replaced_ids=())
    if action.operation == Operation.RENEW:
        ends = job.lifetime_ends_at
        renewed = None if ends is None or terms.renewal_ms is None else ends + terms.renewal_ms
        return replace(job, lifetime_ends_at=renewed, next_check_at=now)  # read the board's end back
    return _applied(job, action, outcome, now, terms)


def maybe_held(job: BoardJob, action: JobAction) -> BoardJob:
    """A CREATE that may have reached the board (its answer lost, or unknown until the
    retries were spent) and is not sent again: the board may hold the job, so it is taken
    as held, its id unknown. A later version goes as an UPDATE (the board says if it holds
    no such job: a CREATE then), a delete as a CLOSE (the board says if there is nothing to
    close); never a job left open because its CREATE's answer was lost."""
    if action.operation != Operation.CREATE or job.held == JobHeld.OPEN:
        return job
    return replace(job, held=JobHeld.OPEN, job_id=None, employer=action.employer)


def _applied(
    job: BoardJob,
    action: JobAction,
    outcome: Delivered,
    now: int,
    terms: JobTerms,
    unexpired: tuple[str, ...] = (),
) -> BoardJob:
    """A CREATE or UPDATE the board applied: it holds the job open, with this content. A job
    under another id than the one held is a new job (Indeed, after the employer's
    `sourceName` changed), listed afresh; the jobs it replaced are expired with it, and those
    whose expiry is not done yet (`unexpired`) are kept, to be expired with the next call."""
    update = action.update
    assert update is not None
    renamed = job.job_id is not None and outcome.job_id is not None and outcome.job_id != job.job_id
    opened = job.held != JobHeld.OPEN or renamed
    listed_at = action.listed_at if action.listed_at is not None else update.last_update_time_millis
    lifetime = job.lifetime_ends_at
    if (job.held != JobHeld.OPEN or lifetime is None) and terms.lifetime_ms is not None:
        lifetime = listed_at + terms.lifetime_ms
    status = ListingStatus.LIVE if job.status == ListingStatus.LIVE and not opened else ListingStatus.RECEIVED
    moved = _status(job, status, None, now)
    return replace(
        moved,
        held=JobHeld.OPEN,
        job_id=outcome.job_id or job.job_id,
        url=None if opened else job.url,
        listed_at=listed_at,
        lifetime_ends_at=lifetime,
        expires_at=update.posting.expires_at,
        next_check_at=now
        + (terms.check_live_ms if status == ListingStatus.LIVE else terms.check_received_ms),
        content=codec.posting_updates().encode(update) if terms.restates else None,
        replaced_ids=unexpired,
    )


def _refused(job: BoardJob, action: JobAction, outcome: Rejected, now: int) -> BoardJob:
    """A refusal: of a CREATE, the job is rejected (nothing held); because the job is
    closed, it is closed; of an UPDATE, the job keeps what it listed."""
    if outcome.job_closed:
        if job.status in BOARDS_OWN:
            return replace(job, held=JobHeld.CLOSED, next_check_at=None)
        closed = _status(job, ListingStatus.CLOSED_BY_BOARD, outcome.reason, now)
        return replace(closed, held=JobHeld.CLOSED, next_check_at=None)
    if action.operation == Operation.CREATE and job.held != JobHeld.OPEN:
        return replace(_status(job, ListingStatus.REJECTED, outcome.reason, now), next_check_at=None)
    return job


def listed(job: BoardJob, listing: BoardListing, now: int, terms: JobTerms) -> BoardJob:
    """The job once the board's status of it was read back: live (with its page), closed by
    the board (rejected, for a job never live), expired (its lifetime lapsed); not decided
    yet, only when it is read next."""
    lifetime = listing.lifetime_ends_at if listing.lifetime_ends_at is not None else job.lifetime_ends_at
    job = replace(
        job,
        lifetime_ends_at=lifetime,
        listed_at=job.listed_at if job.listed_at is not None else listing.listed_at,
    )
    said = listing.status
    if said is None or job.held != JobHeld.OPEN:
        status, reason = job.status, job.reason
    elif said == ListingStatus.LIVE:
        status, reason = ListingStatus.LIVE, None
        job = replace(job, url=listing.url or job.url)
    elif said in (ListingStatus.CLOSED_BY_BOARD, ListingStatus.CLOSED):
        was_live = job.status in (ListingStatus.LIVE, ListingStatus.CLOSED_BY_BOARD)
        status = ListingStatus.CLOSED_BY_BOARD if was_live else ListingStatus.REJECTED
        reason = listing.reason
    else:
        status, reason = said, listing.reason
    moved = _status(job, status, reason, now) if status is not None else job
    interval = terms.check_live_ms if status == ListingStatus.LIVE else terms.check_received_ms
    return replace(moved, next_check_at=now + interval if status in WATCHED else None)


def _status(job: BoardJob, status: ListingStatus, reason: str | None, now: int) -> BoardJob:
    if job.status == status and job.reason == reason:
        return job
    return replace(job, status=status, reason=reason, since=now)


def changed(before: BoardJob | None, after: BoardJob) -> bool:
    """Whether the job's status (as an employer sees it) changed: its status, reason, id or page."""
    if before is None:
        return after.status is not None
    return (before.status, before.reason, before.job_id, before.url) != (
        after.status,
        after.reason,
        after.job_id,
        after.url,
    )
