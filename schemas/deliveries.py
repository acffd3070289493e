"""A DeliveryState for `jobpost.deliveries`: key `{destination}/{posting_id}`, on the same
partition number as the posting, so a consumer restores only its partitions. A
DeliveryEvent for `jobpost.delivery-events`: key `{posting_id}`, on that partition too."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaException, Producer
from prometheus_client import Counter

from schemas import codec
from schemas.enums import DeliveryOutcome
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState, DeliveryStatus, Destination
from schemas.outbox import Outgoing

log = logging.getLogger(__name__)
EVENTS_DROPPED = Counter(
    "jobpost_delivery_events_dropped_total", "Delivery events Kafka did not take (the timeline misses them)"
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
        updated_at=_now_ms(),
    )


def state_record(topic: str, partition: int, state: DeliveryState) -> Outgoing:
    key = f"{state.destination.value}/{state.posting_id}"
    return Outgoing(topic, key, codec.delivery_states().encode(state), partition=partition)


# What each recorded status tells the timeline.
OUTCOME_OF_STATUS = {
    DeliveryStatus.DELIVERED: DeliveryOutcome.DELIVERED,
    DeliveryStatus.CLOSED: DeliveryOutcome.CLOSED,
    DeliveryStatus.RETRYING: DeliveryOutcome.RETRYING,
    DeliveryStatus.FAILED: DeliveryOutcome.DEAD_LETTERED,
}


def _now_ms() -> int:
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
) -> DeliveryEvent:
    """What an attempt came to, at `at` (default: now)."""
    when = _now_ms() if at is None else at
    return DeliveryEvent(posting_id, version, destination, attempt, outcome, when, error, next_attempt_at)


def event_record(topic: str, partition: int, event: DeliveryEvent) -> Outgoing:
    return Outgoing(topic, event.posting_id, codec.delivery_events().encode(event), partition=partition)


def publish(producer: Producer, record: Outgoing) -> None:
    """Produce an event without waiting for it: a delivery never waits for its timeline.
    One Kafka refuses is counted and logged, never retried."""

    def on_delivery(error: object, _message: object) -> None:
        if error is not None:
            EVENTS_DROPPED.inc()
            log.warning("%s refused a delivery event: %s", record.topic, error)

    try:
        record.produce(producer, on_delivery)
    except (BufferError, KafkaException) as exc:
        EVENTS_DROPPED.inc()
        log.warning("could not produce a delivery event to %s: %s", record.topic, exc)
