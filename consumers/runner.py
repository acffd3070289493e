"""The Kafka side of delivery, shared by every destination: records in, offsets out.

It feeds `jobpost.postings` to a `LaneScheduler` and commits an offset only when every
record at or below it is finished: delivered, skipped, or dead-lettered, and whatever it
depends on (its DeliveryState, its dead letter) acknowledged by Kafka. A record it cannot
read is dead-lettered as it is. Partitions pause when too much is buffered. Retry progress
lives in `jobpost.deliveries` and, as a cache of it, in a local store per partition
(`consumers.states`) brought up to date on assignment, so a restarted or rebalanced
consumer resumes the same attempt count and deadline, reading only what changed since.
"""

from __future__ import annotations

import asyncio
import logging
import time

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

from consumers.config import ConsumerSettings
from consumers.lanes import Board, Clock, Item, LaneScheduler
from consumers.offsets import OffsetTracker
from consumers.retry import RetryPolicy
from consumers.states import StoredStates
from runtime import records
from runtime.dead_letters import dead_letter
from runtime.deliveries import event_record, publish, state_record
from runtime.kafka import coordinates, is_record, record_lag
from runtime.outbox import deliver
from runtime.stores import Stores
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState
from schemas.topics import Component, Topics

log = logging.getLogger(__name__)


class KafkaOutcomes:
    """Delivery states to `jobpost.deliveries` and then the local store, dead letters to
    `jobpost.<group>.dlq`; each call returns once Kafka acknowledged the record. Events to
    `jobpost.delivery-events`, without waiting."""

    def __init__(self, producer: Producer, topics: Topics, group: Component, states: StoredStates) -> None:
        self.producer = producer
        self.topics = topics
        self.group = group
        self.states = states

    async def record(self, item: Item, state: DeliveryState) -> None:
        outgoing = state_record(self.topics.deliveries, item.partition, state)
        offset = await deliver(self.producer, outgoing)
        assert outgoing.value is not None
        self.states.record(item.partition, item.posting_id, outgoing.value, offset)  # no await between

    def event(self, item: Item, event: DeliveryEvent) -> None:
        publish(self.producer, event_record(self.topics.delivery_events, item.partition, event))

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        await self.dead_letter_message(item.source, error, attempts, first_attempt_ms, item.version)

    async def dead_letter_message(
        self,
        message: Message,
        error: str,
        attempts: int = 1,
        first_ms: int | None = None,
        version: int | None = None,
    ) -> None:
        posting_id = (message.key() or b"").decode(errors="replace")
        letter = dead_letter(
            self.topics, self.group, message, error,
            attempts=attempts, first_attempt_ms=first_ms, version=version, posting_id=posting_id,
        )  # fmt: skip
        await deliver(self.producer, letter)


class DeliveryRunner:
    def __init__(
        self,
        settings: ConsumerSettings,
        board: Board,
        policy: RetryPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.destination = settings.destination
        self.topics = Topics(settings.kafka.topic_prefix)
        self.producer = Producer(settings.kafka.producer_config())
        self.states = StoredStates(
            Stores(settings.state, settings.kafka, self.destination.value, self.topics.deliveries),
            self.destination,
            settings.kafka.partitions,
        )
        self.outcomes = KafkaOutcomes(self.producer, self.topics, settings.component, self.states)
        self.scheduler = LaneScheduler(
            self.destination,
            board,
            self.outcomes,
            self.states,
            self._finish,
            policy=policy or RetryPolicy(settings.retry),
            clock=clock,
            max_in_flight=settings.max_in_flight,
        )
        self.trackers: dict[int, OffsetTracker] = {}
        self.poison_tasks: set[asyncio.Task[None]] = set()
        self.paused = False
        self._stop = asyncio.Event()
        self.consumer: Consumer | None = None

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        kafka = self.settings.kafka
        self.consumer = Consumer(kafka.member_config(self.settings.group, self.settings.session_timeout_ms))
        self.consumer.subscribe(
            [self.topics.postings],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_revoke,
        )
        last_commit = time.monotonic()
        try:
            while not self._stop.is_set():
                messages = self.consumer.consume(num_messages=500, timeout=0)
                for message in messages:
                    self._take(message)
                # Let the board calls run: sleep a little when idle, just yield when busy.
                await asyncio.sleep(0 if messages else 0.005)
                self.producer.poll(0)  # delivery reports: they finish records
                self._apply_backpressure()
                if time.monotonic() - last_commit >= self.settings.commit_interval_s:
                    self._commit()
                    last_commit = time.monotonic()
        finally:
            self.scheduler.close()
            for task in self.poison_tasks:
                task.cancel()
            self._commit()
            self.consumer.close()
            self.producer.flush(10)
            self.states.close()

    def _take(self, message: Message) -> None:
        if not is_record(message):
            return
        _, partition, offset = coordinates(message)
        self.trackers.setdefault(partition, OffsetTracker()).add(offset)
        try:
            posting_id, update = records.posting_update(message)
        except records.PoisonRecord as exc:
            records.note_poison(self.settings.component, message, exc.reason)
            task = asyncio.create_task(self._dead_letter_poison(message, exc.reason))
            self.poison_tasks.add(task)
            task.add_done_callback(self.poison_tasks.discard)
            return
        self.scheduler.add(Item(posting_id, update, partition, offset, message))

    async def _dead_letter_poison(self, message: Message, reason: str) -> None:
        await self.outcomes.dead_letter_message(message, reason)
        _, partition, offset = coordinates(message)
        self._finish_offset(partition, offset)

    def _finish(self, item: Item) -> None:
        self._finish_offset(item.partition, item.offset)

    def _finish_offset(self, partition: int, offset: int) -> None:
        tracker = self.trackers.get(partition)
        if tracker is not None:
            tracker.finish(offset)

    def _commit(self) -> None:
        """Commit past every finished prefix. What a finished record depends on was
        acknowledged before it finished, so no flush is needed here."""
        offsets = [
            TopicPartition(self.topics.postings, partition, offset)
            for partition, tracker in self.trackers.items()
            if (offset := tracker.committable()) is not None
        ]
        if not offsets or self.consumer is None:
            return
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            log.warning("commit failed (will retry): %s", exc)
            return
        record_lag(self.consumer, self.settings.group, offsets)

    def _apply_backpressure(self) -> None:
        assert self.consumer is not None
        buffered = sum(len(t) for t in self.trackers.values())
        if not self.paused and buffered >= self.settings.max_buffered:
            self.consumer.pause(self.consumer.assignment())
            self.paused = True
        elif self.paused and buffered < self.settings.max_buffered // 2:
            self.consumer.resume(self.consumer.assignment())
            self.paused = False

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.states.restore(tp.partition)
            self.trackers[tp.partition] = OffsetTracker()
        if self.paused:
            consumer.pause(partitions)
        log.info("%s owns partitions %s", self.destination, sorted(self.trackers))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._commit()
        gone = {tp.partition for tp in partitions}
        self.scheduler.drop_partitions(gone)
        # States already produced land before the partitions' next owner restores them.
        self.producer.flush(10)
        self.states.close(gone)
        for partition in gone:
            self.trackers.pop(partition, None)
