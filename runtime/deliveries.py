"""The records of delivery progress: a DeliveryState for `jobpost.deliveries` (key
`{destination}/{posting_id}`, on the posting's partition number, so a consumer restores only
its partitions) and a DeliveryEvent for `jobpost.delivery-events` (key `{posting_id}`, on
that partition too), and publishing an event without waiting for it."""

from __future__ import annotations

import logging

from confluent_kafka import KafkaException, Producer
from prometheus_client import Counter

from runtime.outbox import Outgoing
from schemas import codec
from schemas.deliveries import DeliveryState
from schemas.events import DeliveryEvent

log = logging.getLogger(__name__)
EVENTS_DROPPED = Counter(
    "jobpost_delivery_events_dropped_total", "Delivery events Kafka did not take (the timeline misses them)"
)


def state_record(topic: str, partition: int, state: DeliveryState) -> Outgoing:
    key = f"{state.destination.value}/{state.posting_id}"
    return Outgoing(topic, key, codec.delivery_states().encode(state), partition=partition)


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
