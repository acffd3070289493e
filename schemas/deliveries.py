"""The records of the delivery side as types: one posting's progress at one destination
(`DeliveryState`, the value of `jobpost.deliveries`), with the job the board holds for it
(`BoardJob`) and its dead letters not resolved yet (`UnresolvedLetter`); and both that state
and what one attempt came to (`DeliveryEvent`, for `jobpost.delivery-events`) made as of now.
Their records (keys, partitions) are `runtime.deliveries`.

As in schemas.model, field names and enum symbols are exactly the Avro ones, and each type
turns itself into the dict fastavro writes (`to_avro`) and back (`from_avro`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from schemas.enums import (
    _DESTINATIONS,
    _JOB_HELD,
    _LISTING_STATUSES,
    _STATUSES,
    DeliveryOutcome,
    DeliveryStatus,
    Destination,
    JobHeld,
    ListingStatus,
)
from schemas.events import DeliveryEvent


@dataclass(frozen=True, slots=True)
class UnresolvedLetter:
    """A dead letter of the posting that no delivered version has resolved yet."""

    version: int
    dead_lettered_at: int


@dataclass(frozen=True, slots=True)
class BoardJob:
    """The job a board holds for a posting, as far as its consumer knows (Avro `BoardJob`):
    whether it holds one, the board's id and page for it, its status in the board's terms,
    its first listing date, when the board ends it unless renewed, when the posting expires,
    when its status is read back next, (for a board whose RENEW and CLOSE restate the
    job: LinkedIn) the encoded `PostingUpdate` whose content it holds, and (v4) the board's
    ids of jobs this one replaced that are still to be expired (Indeed made a new job after
    the employer's `sourceName` changed)."""

    held: JobHeld = JobHeld.NONE
    job_id: str | None = None
    url: str | None = None
    employer: str | None = None
    status: ListingStatus | None = None
    reason: str | None = None
    since: int | None = None
    listed_at: int | None = None
    lifetime_ends_at: int | None = None
    expires_at: int | None = None
    next_check_at: int | None = None
    content: bytes | None = None
    replaced_ids: tuple[str, ...] = ()

    def to_avro(self) -> dict[str, Any]:
        return {
            "held": self.held,
            "job_id": self.job_id,
            "url": self.url,
            "employer": self.employer,
            "status": self.status,
            "reason": self.reason,
            "since": self.since,
            "listed_at": self.listed_at,
            "lifetime_ends_at": self.lifetime_ends_at,
            "expires_at": self.expires_at,
            "next_check_at": self.next_check_at,
            "content": self.content,
            "replaced_ids": list(self.replaced_ids),
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> BoardJob:
        status = record["status"]
        return BoardJob(
            _JOB_HELD[record["held"]],
            record["job_id"],
            record["url"],
            record["employer"],
            None if status is None else _LISTING_STATUSES[status],
            record["reason"],
            record["since"],
            record["listed_at"],
            record["lifetime_ends_at"],
            record["expires_at"],
            record["next_check_at"],
            record["content"],
            tuple(record["replaced_ids"]),
        )


@dataclass(frozen=True, slots=True)
class DeliveryState:
    """One posting's progress at one destination: the value of `jobpost.deliveries`."""

    destination: Destination
    posting_id: str
    status: DeliveryStatus
    delivered_version: int | None = None
    pending_version: int | None = None  # the version being attempted, if any
    attempts: int = 0
    first_attempt_at: int | None = None
    next_attempt_at: int | None = None
    last_error: str | None = None
    updated_at: int = 0
    task_id: str | None = None  # SUBMITTED: the board's task for pending_version
    submitted_at: int | None = None
    uncharged_ms: int = 0  # waited for the board as a whole since the first attempt
    paused_since: int | None = None
    paused_reason: str | None = None
    finished_version: int | None = None  # the newest version delivered, dead-lettered or skipped
    unresolved_letters: tuple[UnresolvedLetter, ...] = ()
    job: BoardJob | None = None  # v3: what the board holds; None in records before (see `held`)

    @property
    def held(self) -> JobHeld:
        """What the board holds, derived for a record from before v3 (which had no `job`): a
        delivered version not closed is an open job (its id unknown), a closed one closed."""
        if self.job is not None:
            return self.job.held
        if self.status == DeliveryStatus.CLOSED:
            return JobHeld.CLOSED
        return JobHeld.NONE if self.delivered_version is None else JobHeld.OPEN

    def to_avro(self) -> dict[str, Any]:
        return {
            "destination": self.destination,
            "posting_id": self.posting_id,
            "delivered_version": self.delivered_version,
            "pending_version": self.pending_version,
            "status": self.status,
            "attempts": self.attempts,
            "first_attempt_at": self.first_attempt_at,
            "next_attempt_at": self.next_attempt_at,
            "last_error": self.last_error,
            "updated_at": self.updated_at,
            "task_id": self.task_id,
            "submitted_at": self.submitted_at,
            "uncharged_ms": self.uncharged_ms,
            "paused_since": self.paused_since,
            "paused_reason": self.paused_reason,
            "finished_version": self.finished_version,
            "unresolved_letters": [
                {"version": u.version, "dead_lettered_at": u.dead_lettered_at}
                for u in self.unresolved_letters
            ],
            "job": None if self.job is None else self.job.to_avro(),
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> DeliveryState:
        return DeliveryState(
            _DESTINATIONS[record["destination"]],
            record["posting_id"],
            _STATUSES[record["status"]],
            record["delivered_version"],
            record["pending_version"],
            record["attempts"],
            record["first_attempt_at"],
            record["next_attempt_at"],
            record["last_error"],
            record["updated_at"],
            record["task_id"],
            record["submitted_at"],
            record["uncharged_ms"],
            record["paused_since"],
            record["paused_reason"],
            record["finished_version"],
            tuple(
                UnresolvedLetter(u["version"], u["dead_lettered_at"]) for u in record["unresolved_letters"]
            ),
            None if record["job"] is None else BoardJob.from_avro(record["job"]),
        )


def delivery_state(
    destination: Destination,
    posting_id: str,
    *,
    status: DeliveryStatus,
    delivered_version: int | None,
    pending_version: int | None = None,
    attempts: int = 0,
    first_attempt_at: int | None = None,
    next_attempt_at: int | None = None,
    last_error: str | None = None,
    task_id: str | None = None,
    submitted_at: int | None = None,
    uncharged_ms: int = 0,
    paused_since: int | None = None,
    paused_reason: str | None = None,
    finished_version: int | None = None,
    unresolved_letters: tuple[UnresolvedLetter, ...] = (),
    job: BoardJob | None = None,
) -> DeliveryState:
    """The posting's progress at the destination, as of now."""
    return DeliveryState(
        destination,
        posting_id,
        status,
        delivered_version=delivered_version,
        pending_version=pending_version,
        attempts=attempts,
        first_attempt_at=first_attempt_at,
        next_attempt_at=next_attempt_at,
        last_error=last_error,
        updated_at=now_ms(),
        task_id=task_id,
        submitted_at=submitted_at,
        uncharged_ms=uncharged_ms,
        paused_since=paused_since,
        paused_reason=paused_reason,
        finished_version=finished_version,
        unresolved_letters=unresolved_letters,
        job=job,
    )


# What each recorded status tells the timeline.
OUTCOME_OF_STATUS = {
    DeliveryStatus.DELIVERED: DeliveryOutcome.DELIVERED,
    DeliveryStatus.CLOSED: DeliveryOutcome.CLOSED,
    DeliveryStatus.RETRYING: DeliveryOutcome.RETRYING,
    DeliveryStatus.FAILED: DeliveryOutcome.DEAD_LETTERED,
    DeliveryStatus.SUBMITTED: DeliveryOutcome.SUBMITTED,
    DeliveryStatus.PAUSED: DeliveryOutcome.PAUSED,
}


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def delivery_event(
    destination: Destination,
    posting_id: str,
    version: int,
    outcome: DeliveryOutcome,
    attempt: int,
    *,
    error: str | None = None,
    next_attempt_at: int | None = None,
    at: int | None = None,
    task_id: str | None = None,
    request_id: str | None = None,
) -> DeliveryEvent:
    """What an attempt came to, at `at` (default: now)."""
    when = now_ms() if at is None else at
    return DeliveryEvent(
        posting_id, version, destination, attempt, outcome, when, error, next_attempt_at, task_id, request_id
    )
