"""A DeliveryState for `jobpost.deliveries`: key `{destination}/{posting_id}`, on the same
partition number as the posting, so a consumer restores only its partitions."""

from __future__ import annotations

import time
from typing import Any

from schemas import codec
from schemas.outbox import Outgoing


def delivery_state(
    destination: str,
    posting_id: str,
    *,
    status: str,
    delivered_version: int | None,
    pending_version: int | None = None,
    attempts: int = 0,
    first_attempt_at: int | None = None,
    next_attempt_at: int | None = None,
    last_error: str | None = None,
) -> dict[str, Any]:
    return {
        "destination": destination,
        "posting_id": posting_id,
        "delivered_version": delivered_version,
        "pending_version": pending_version,
        "status": status,
        "attempts": attempts,
        "first_attempt_at": first_attempt_at,
        "next_attempt_at": next_attempt_at,
        "last_error": last_error,
        "updated_at": time.time_ns() // 1_000_000,
    }


def state_record(topic: str, partition: int, state: dict[str, Any]) -> Outgoing:
    key = f"{state['destination']}/{state['posting_id']}"
    return Outgoing(topic, key, codec.delivery_states().encode(state), partition=partition)
