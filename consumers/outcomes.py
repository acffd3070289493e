"""Where the lanes' outcomes go: delivery states to `jobpost.deliveries` and then the local
store, dead letters to `jobpost.<board>.dlq`, each returning once Kafka acknowledged it;
timeline events to `jobpost.delivery-events`, without waiting."""

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


class KafkaOutcomes:
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
        letter = None if item.request is None else item.request.update
        assert isinstance(item.source, Message)
        await self.dead_letter_message(item.source, error, attempts, first_attempt_ms, item.version, letter)

    async def dead_letter_message(
        self,
        message: Message,
        error: str,
        attempts: int = 1,
        first_ms: int | None = None,
        version: int | None = None,
        value: bytes | None = None,
    ) -> None:
        posting_id = (message.key() or b"").decode(errors="replace")
        letter = dead_letter(
            self.topics, self.group, message, error, attempts=attempts, first_attempt_ms=first_ms,
            version=version, posting_id=posting_id, value=value,
        )  # fmt: skip
        await deliver(self.producer, letter)
