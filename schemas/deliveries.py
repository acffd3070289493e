"""Writing a DeliveryState to `jobpost.deliveries`: key `{destination}/{posting_id}`, on
the same partition number as the posting, so a consumer restores only its partitions."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Producer

from schemas import codec


def record_delivery(
    producer: Producer,
    topic: str,
    partition: int,
    *,
    destination: str,
    posting_id: str,
    status: str,
    delivered_version: int | None,
    pending_version: int | None = None,
    attempts: int = 0,
    first_attempt_at: int | None = None,
    next_attempt_at: int | None = None,
    last_error: str | None = None,
) -> dict[str, Any]:
    state = {
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
    producer.produce(
        topic,
        key=f"{destination}/{posting_id}",
        value=codec.delivery_states().encode(state),
        partition=partition,
    )
    return state
