"""A DeliveryState for `jobpost.deliveries`: key `{destination}/{posting_id}`, on the same
partition number as the posting, so a consumer restores only its partitions."""

from __future__ import annotations

import time

from schemas import codec
from schemas.model import DeliveryState, DeliveryStatus, Destination
from schemas.outbox import Outgoing


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
        updated_at=time.time_ns() // 1_000_000,
    )


def state_record(topic: str, partition: int, state: DeliveryState) -> Outgoing:
    key = f"{state.destination.value}/{state.posting_id}"
    return Outgoing(topic, key, codec.delivery_states().encode(state), partition=partition)
