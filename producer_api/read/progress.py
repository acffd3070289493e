"""A posting's delivery progress: how far each destination has got with its current version
(`GET /postings/{id}/deliveries`). Pure: made from the delivery states the views hold.

A destination's recorded status speaks of the version it last worked on; the progress
speaks of the posting's current version, so having delivered (or dead-lettered) only an
older version means the current one is still pending there. Beside it, the job the board
holds for the posting (`listing`: the board's id and page, its status in the board's terms,
the board's reason, since when), as the board consumer last learned it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from schemas.deliveries import BoardJob, DeliveryState
from schemas.enums import DeliveryStatus, JobHeld
from schemas.model import Destination


class ProgressStatus(StrEnum):
    """Where the posting's current version stands at a destination."""

    DELIVERED = "delivered"
    PENDING = "pending"  # not tried yet, or only an older version delivered
    RETRYING = "retrying"
    FAILED = "failed"  # dead-lettered
    CLOSED = "closed"  # the delete was delivered
    SUBMITTED = "submitted"  # an asynchronous board accepted it and has not confirmed it yet
    PAUSED = "paused"  # held while the board as a whole is unavailable
    NOT_TARGETED = "not_targeted"  # the posting's boards leave this board out (and it holds no open job)


# A status recorded for the version it names, read as the progress of that version.
_PROGRESS_OF = {
    DeliveryStatus.DELIVERED: ProgressStatus.DELIVERED,
    DeliveryStatus.PENDING: ProgressStatus.PENDING,
    DeliveryStatus.RETRYING: ProgressStatus.RETRYING,
    DeliveryStatus.FAILED: ProgressStatus.FAILED,
    DeliveryStatus.CLOSED: ProgressStatus.CLOSED,
    DeliveryStatus.SUBMITTED: ProgressStatus.SUBMITTED,
    DeliveryStatus.PAUSED: ProgressStatus.PAUSED,
}


@dataclass(frozen=True)
class Listing:
    """The job a board holds for the posting: the board's id and public page, its status in
    the board's terms (submitted, received, live, closed, closed_by_board, expired,
    rejected), the board's words for a status it chose, and since when (epoch ms)."""

    id: str | None
    url: str | None
    status: str
    reason: str | None
    since: int | None


@dataclass(frozen=True)
class Progress:
    """One destination's progress with the posting."""

    destination: Destination
    status: ProgressStatus
    delivered_version: int | None = None
    attempts: int = 0
    first_attempt_at: int | None = None  # epoch millis, of the version being attempted
    next_attempt_at: int | None = None  # epoch millis, while retrying
    last_error: str | None = None
    task_id: str | None = None  # while submitted: the board's task
    paused_reason: str | None = None  # while paused: why the board is unavailable
    listing: Listing | None = None  # the job at the board, once the board answered


def progress(
    states: dict[Destination, DeliveryState],
    current_version: int,
    boards: tuple[Destination, ...] | None = None,
) -> list[Progress]:
    """Every destination's progress with the posting at `current_version`, in the order of
    `Destination`; pending where nothing is recorded yet; not targeted at a board the
    posting's `boards` leave out (None: every board), unless a job there is still to close."""
    return [
        _progress(destination, states.get(destination), current_version, boards)
        for destination in Destination
    ]


def listing_of(job: BoardJob | None) -> Listing | None:
    """The job as the API shows it (None until the board answered)."""
    if job is None or job.status is None:
        return None
    return Listing(job.job_id, job.url, job.status.value.lower(), job.reason, job.since)


def _progress(
    destination: Destination,
    state: DeliveryState | None,
    current_version: int,
    boards: tuple[Destination, ...] | None,
) -> Progress:
    left_out = boards is not None and destination != Destination.SEARCH and destination not in boards
    if state is None:
        return Progress(destination, ProgressStatus.NOT_TARGETED if left_out else ProgressStatus.PENDING)
    status = status_for(state, current_version)
    if left_out and state.held != JobHeld.OPEN and status != ProgressStatus.CLOSED:
        status = ProgressStatus.NOT_TARGETED
    return Progress(
        destination,
        status,
        state.delivered_version,
        state.attempts,
        state.first_attempt_at,
        state.next_attempt_at,
        state.last_error,
        state.task_id,
        state.paused_reason,
        listing_of(state.job),
    )


def status_for(state: DeliveryState | None, current_version: int) -> ProgressStatus:
    """A destination's status for the posting's current version (None: nothing recorded)."""
    if state is None:
        return ProgressStatus.PENDING
    delivered = state.delivered_version
    if state.status == DeliveryStatus.DELIVERED and (delivered is None or delivered < current_version):
        return ProgressStatus.PENDING
    if state.status == DeliveryStatus.FAILED and state.pending_version != current_version:
        return ProgressStatus.PENDING
    return _PROGRESS_OF[state.status]
