"""A posting's progress at a destination (`DeliveryState`, for `jobpost.deliveries`) and
what one attempt came to (`DeliveryEvent`, for `jobpost.delivery-events`), made as of now.
Their records (keys, partitions) are `runtime.deliveries`."""

from __future__ import annotations

import time

from schemas.enums import DeliveryOutcome
from schemas.events import DeliveryEvent
from schemas.model import BoardJob, DeliveryState, DeliveryStatus, Destination, UnresolvedLetter


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
