"""A posting's delivery progress: how far each destination has got with its current version
(`GET /postings/{id}/deliveries`). Pure: made from the delivery states the views hold.

A destination's recorded status speaks of the version it last worked on; the progress
speaks of the posting's current version, so having delivered (or dead-lettered) only an
older version means the current one is still pending there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from schemas.model import DeliveryState, DeliveryStatus, Destination


class ProgressStatus(StrEnum):
    """Where the posting's current version stands at a destination."""

    DELIVERED = "delivered"
    PENDING = "pending"  # not tried yet, or only an older version delivered
    RETRYING = "retrying"
    FAILED = "failed"  # dead-lettered
    CLOSED = "closed"  # the delete was delivered


# A status recorded for the version it names, read as the progress of that version.
_PROGRESS_OF = {
    DeliveryStatus.DELIVERED: ProgressStatus.DELIVERED,
    DeliveryStatus.PENDING: ProgressStatus.PENDING,
    DeliveryStatus.RETRYING: ProgressStatus.RETRYING,
    DeliveryStatus.FAILED: ProgressStatus.FAILED,
    DeliveryStatus.CLOSED: ProgressStatus.CLOSED,
}


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


def progress(states: dict[Destination, DeliveryState], current_version: int) -> list[Progress]:
    """Every destination's progress with the posting at `current_version`, in the order of
    `Destination`; pending where nothing is recorded yet."""
    return [_progress(destination, states.get(destination), current_version) for destination in Destination]


def _progress(destination: Destination, state: DeliveryState | None, current_version: int) -> Progress:
    if state is None:
        return Progress(destination, ProgressStatus.PENDING)
    return Progress(
        destination,
        status_for(state, current_version),
        state.delivered_version,
        state.attempts,
        state.first_attempt_at,
        state.next_attempt_at,
        state.last_error,
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
