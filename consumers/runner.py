"""The Kafka side of delivery, shared by every destination: records in, offsets out.

It feeds `jobpost.postings` and the board's redrive requests (`jobpost.<board>.redrive`,
co-partitioned) to a `LaneScheduler`, and commits an offset only when every record at or
below it is finished: delivered, skipped, or dead-lettered, and whatever it depends on (its
DeliveryState, its dead letter) acknowledged by Kafka. A record it cannot read is
dead-lettered as it is (a request nobody can read is counted and passed over). Kafka is
polled on a thread of its own (`consumers.polling`), the producer's delivery reports are
served on another, so the event loop only runs lanes, timers and board calls. Retry
progress lives in `jobpost.deliveries` and, as a cache of it, in a local store per
partition (`consumers.states`), restored on a worker thread when a partition is assigned,
before its records are read, so a restarted or rebalanced consumer resumes the same
attempt count and deadline, reading only what changed since.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from confluent_kafka import Message, Producer, TopicPartition
from prometheus_client import Gauge

from consumers.clock import Clock
from consumers.config import ConsumerSettings
from consumers.destination.metrics import STRANDED
from consumers.destination.shared import SharedDestination
from consumers.items import Item
from consumers.lanes import LaneScheduler
from consumers.offsets import OffsetTracker
from consumers.outcomes import KafkaOutcomes
from consumers.polling import KafkaPolling
from consumers.redrive import request_item
from consumers.retry import RetryPolicy
from consumers.states import StoredStates
from runtime import records
from runtime.kafka import coordinates
from runtime.kafka_clients import KafkaClients
from runtime.stores import Stores
from schemas.topics import Topics

log = logging.getLogger(__name__)

OLDEST_UNCONSUMED = Gauge(
    "jobpost_consumer_oldest_unconsumed_age_seconds",
    "Age of the oldest record this member read and has not finished (0: none)",
    ["group"],
)
OLDEST_LETTER = Gauge(
    "jobpost_dead_letter_oldest_unresolved_age_seconds",
    "Age of the oldest dead letter no delivered version resolved yet, on this member's partitions (0: none)",
    ["destination"],
)


class DeliveryRunner:
    def __init__(
        self,
        settings: ConsumerSettings,
        destination: SharedDestination,
        policy: RetryPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.destination = destination
        self.name = settings.destination
        self.topics = Topics(settings.kafka.topic_prefix)
        self.clients = KafkaClients(settings.kafka)
        self.producer = self.clients.producer()
        self.states = StoredStates(
            Stores(settings.state, settings.kafka, self.name.value, self.topics.deliveries),
            self.name,
            settings.kafka.partitions,
        )
        self.outcomes = KafkaOutcomes(self.producer, self.topics, settings.component, self.states)
        self.scheduler = LaneScheduler(
            self.name, destination, self.outcomes, self.states, self._finish,
            policy=policy or RetryPolicy(settings.retry), clock=clock, conflate=settings.conflate,
        )  # fmt: skip
        self.trackers: dict[tuple[str, int], OffsetTracker] = {}
        self.owned: set[int] = set()
        self.generation: dict[int, int] = {}  # bumped at each assignment and revocation of a partition
        self.background: set[asyncio.Task[None]] = set()
        self.restorer = ThreadPoolExecutor(1, thread_name_prefix="restore")  # one store at a time
        self.polling: KafkaPolling | None = None
        self._stop = asyncio.Event()
        self._held = False
        OLDEST_LETTER.labels(self.name.value).set_function(self._oldest_letter_age)

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        member = self.clients.member(
            self.settings.group, session_timeout_ms=self.settings.session_timeout_ms, gathered=True
        )
        follower = self.clients.reader(f"{self.settings.group}-redrive", gathered=True)
        requests = (self.topics.postings, self.topics.redrive(self.name))
        self.polling = KafkaPolling(
            member, follower, self.settings.group, requests, self.producer, self, loop
        )
        reports = _ProducerPolling(self.producer)
        reports.start()
        self.destination.start()
        self.polling.start()
        try:
            while not self._stop.is_set():
                if self.polling.failure is not None:
                    raise RuntimeError("Kafka polling failed") from self.polling.failure
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.settings.commit_interval_s)
                self._commit()
                self._apply_backpressure()
                self._publish_ages()
                self._watch()
        finally:
            self.polling.stop()
            await asyncio.to_thread(self.polling.join)  # leaving the group commits what is finished
            self.scheduler.close()
            for task in list(self.background):
                task.cancel()
            await self.destination.close()
            reports.stop()
            self.producer.flush(10)
            await asyncio.to_thread(self.restorer.submit(self.states.close).result)
            self.restorer.shutdown()

    # The polling thread's sink (called on the event loop).

    def take(self, postings: list[Message], requests: list[Message]) -> None:
        for message in postings:
            self._take_posting(message)
        for message in requests:
            self._take_request(message)

    async def assigned(self, partitions: list[int]) -> None:
        self.owned |= set(partitions)
        self.destination.set_share(len(self.owned), self.settings.kafka.partitions)
        for partition in partitions:
            self.generation[partition] = self.generation.get(partition, 0) + 1
            self._spawn(self._restore(partition, self.generation[partition]))

    async def revoked(self, partitions: list[int]) -> tuple[list[TopicPartition], list[TopicPartition]]:
        gone = set(partitions)
        offsets = self._committable(gone)
        self.scheduler.drop_partitions(gone)
        self.states.give_up(gone)
        self.restorer.submit(self.states.close, gone)  # after any restore of them still running
        for key in [k for k in self.trackers if k[1] in gone]:
            del self.trackers[key]
        for partition in gone:
            self.generation[partition] = self.generation.get(partition, 0) + 1
        self.owned -= gone
        self.destination.set_share(len(self.owned), self.settings.kafka.partitions)
        return offsets

    async def _restore(self, partition: int, generation: int) -> None:
        """Restore on the worker thread, then start reading the partition; tried again
        (every 5 s) while it fails, as long as the partition is still this member's."""
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        while True:
            try:
                store, letters = await loop.run_in_executor(self.restorer, self.states.restore, partition)
                break
            except Exception:  # Kafka unreachable, a timeout: the partition waits, the others run
                log.exception("%s partition %d: restore failed, trying again in 5 s", self.name, partition)
                await asyncio.sleep(5)
                if self.generation.get(partition) != generation:
                    return
        if self.generation.get(partition) != generation:
            return  # revoked meanwhile: its close is queued behind this restore
        self.states.opened(partition, store, letters)
        for topic in (self.topics.postings, self.topics.redrive(self.name)):
            self.trackers[(topic, partition)] = OffsetTracker()
        assert self.polling is not None
        self.polling.restored(partition)
        log.info("%s partition %d restored in %.1f s: reading its records", self.name, partition,
                 time.monotonic() - started)  # fmt: skip

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def _take_posting(self, message: Message) -> None:
        topic, partition, offset = coordinates(message)
        tracker = self.trackers.get((topic, partition))
        if tracker is None:
            return  # a partition given up meanwhile: its next owner reads it again
        tracker.add(offset, message.timestamp()[1])
        try:
            posting_id, update = records.posting_update(message)
        except records.PoisonRecord as exc:
            records.note_poison(self.settings.component, message, exc.reason)
            self._spawn(self._dead_letter_poison(message, exc.reason))
            return
        self.scheduler.add(
            Item(posting_id, update, partition, offset, message, timestamp_ms=message.timestamp()[1])
        )

    def _take_request(self, message: Message) -> None:
        topic, partition, offset = coordinates(message)
        tracker = self.trackers.get((topic, partition))
        if tracker is None:
            return
        tracker.add(offset, message.timestamp()[1])
        try:
            item = request_item(message)
        except records.PoisonRecord as exc:
            records.note_poison(f"{self.name.value}-redrive", message, exc.reason)
            tracker.finish(offset)  # a request nobody can read asks for nothing
            return
        self.scheduler.add(item)

    async def _dead_letter_poison(self, message: Message, reason: str) -> None:
        await self.outcomes.dead_letter_message(message, reason)
        topic, partition, offset = coordinates(message)
        self._finish_offset(topic, partition, offset)

    def _finish(self, item: Item) -> None:
        topic = self.topics.postings if item.request is None else self.topics.redrive(self.name)
        self._finish_offset(topic, item.partition, item.offset)

    def _finish_offset(self, topic: str, partition: int, offset: int) -> None:
        tracker = self.trackers.get((topic, partition))
        if tracker is not None:
            tracker.finish(offset)

    def _committable(
        self, partitions: set[int] | None = None
    ) -> tuple[list[TopicPartition], list[TopicPartition]]:
        postings: list[TopicPartition] = []
        requests: list[TopicPartition] = []
        for (topic, partition), tracker in self.trackers.items():
            if partitions is not None and partition not in partitions:
                continue
            offset = tracker.committable()
            if offset is not None:
                (postings if topic == self.topics.postings else requests).append(
                    TopicPartition(topic, partition, offset)
                )
        return postings, requests

    def _commit(self) -> None:
        """Commit past every finished prefix. What a finished record depends on was
        acknowledged before it finished, so no flush is needed here."""
        if self.polling is not None:
            self.polling.commit(*self._committable())

    def _apply_backpressure(self) -> None:
        buffered = sum(len(t) for t in self.trackers.values())
        if not self._held and buffered >= self.settings.max_buffered:
            self._held = True
        elif self._held and buffered < self.settings.max_buffered // 2:
            self._held = False
        else:
            return
        assert self.polling is not None
        self.polling.hold(self._held)

    def _publish_ages(self) -> None:
        oldest = [t.oldest_timestamp() for k, t in self.trackers.items() if k[0] == self.topics.postings]
        known = [t for t in oldest if t is not None]
        age = max(0.0, time.time() - min(known) / 1000) if known else 0.0
        OLDEST_UNCONSUMED.labels(self.settings.group).set(age)

    def _watch(self) -> None:
        """The watchdog: postings waiting with no clock (`jobpost_delivery_stranded_postings`);
        never expected, so each time it is not 0 it is said in the log as well."""
        stranded = self.destination.stranded() + self.scheduler.without_clock()
        STRANDED.labels(self.name.value).set(stranded)
        if stranded:
            log.error("%s: %d postings wait with no clock (nothing will send them): a lost wake-up",
                      self.name, stranded)  # fmt: skip

    def _oldest_letter_age(self) -> float:
        oldest = self.states.oldest_unresolved_letter_at()
        return 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)


class _ProducerPolling:
    """Serves the producer's delivery reports on a thread of its own: each resolves a
    future of the event loop thread-safely (`runtime.outbox.deliver`)."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="delivery-reports", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.producer.poll(0.1)
