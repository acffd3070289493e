"""Where what a version came to is written, in Kafka: the posting's delivery state to
`jobpost.deliveries` and then the local store, dead letters to `jobpost.<board>.dlq`, each
returning once Kafka acknowledged it; timeline events to `jobpost.delivery-events`, without
waiting."""

from __future__ import annotations

from confluent_kafka import Message, Producer

from consumers.items import Item
from consumers.states import StoredStates
from runtime.dead_letters import dead_letter
from runtime.deliveries import event_record, publish, state_record
from runtime.outbox import deliver
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState
from schemas.topics import Component, Topics


class KafkaDeliveryLog:
    def __init__(self, producer: Producer, topics: Topics, group: Component, states: StoredStates) -> None:
        self.producer = producer
        self.topics = topics
        self.group = group
        self.states = states

    async def record(self, item: Item, state: DeliveryState) -> None:
        outgoing = state_record(self.topics.deliveries, item.partition, state)
        offset = await deliver(self.producer, outgoing)
        assert outgoing.value is not None
        self.states.record(item.partition, state, outgoing.value, offset)  # no await between

    def event(self, item: Item, event: DeliveryEvent) -> None:
        publish(self.producer, event_record(self.topics.delivery_events, item.partition, event))

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        """The version's record as it was read (a redrive request's: the dead-lettered
        version it carries), for the board's dead-letter topic."""
        assert isinstance(item.source, Message)
        letter = dead_letter(
            self.topics,
            self.group,
            item.source,
            error,
            attempts=attempts,
            first_attempt_ms=first_attempt_ms,
            version=item.version,
            posting_id=item.posting_id,
            value=None if item.request is None else item.request.update,
        )
        await deliver(self.producer, letter)
