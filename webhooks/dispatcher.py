"""The Kafka side of the webhooks: events in, deliveries queued durably, offsets out.

Each event read (a board's from `jobpost.listing-events`, `posting.accepted` from each
version on `jobpost.postings`) is matched against its employer's endpoints once they are
known as of its reading (`webhooks.endpoints`); for each match a delivery is written to
`jobpost.webhook-pending` and, once Kafka acknowledged every one of a batch, queued in its
lane (`webhooks.lanes`) and the source offset marked finished. An offset is committed only
past finished records, so a restart loses nothing: what was read but not queued is read
again, what was queued is restored from `jobpost.webhook-pending` (`webhooks.pending`), and
what was delivered since its source was last committed is recognised and not sent again.

A partition's records are queued by one task at a time, in the order they were read, a batch
once both sources are read as of its newest record's reading (`KafkaPolling.caught_up`), so
the events of a posting from the two sources reach its lanes together and in order (a lane
orders each source by offset and the two by the events' times). A replay request (`jobpost.webhook-replays`)
reads the partition's sources from a time on a worker thread and queues the endpoint's
events it finds, beside the live ones.
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

import aiohttp
from confluent_kafka import Message, Producer, TopicPartition

from runtime import records
from runtime.checkpoint import OffsetTracker
from runtime.kafka import coordinates
from runtime.kafka_clients import KafkaClients
from runtime.webhook_secrets import SecretBox
from schemas import codec
from schemas.listing_events import ListingEvent
from schemas.topics import Topics
from schemas.webhooks import WebhookDelivery, WebhookEndpoint, delivery_key
from webhooks import events, metrics, pending, replays
from webhooks.clock import Clock, SystemClock
from webhooks.config import DispatcherSettings
from webhooks.endpoints import EndpointRegistry
from webhooks.lanes import DeliveryScheduler, Queued
from webhooks.outcomes import KafkaOutcomes
from webhooks.polling import KafkaPolling, Offsets
from webhooks.schedule import RetrySchedule
from webhooks.sender import HttpSender

log = logging.getLogger(__name__)

Read = tuple[str, Message, float]  # (topic, record, when it was read: monotonic)


class Dispatcher:
    def __init__(
        self,
        settings: DispatcherSettings,
        session: aiohttp.ClientSession,
        box: SecretBox,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.kafka = settings.kafka
        self.topics = Topics(settings.kafka.topic_prefix)
        self.clock = clock or SystemClock()
        self.producer = KafkaClients(settings.kafka).producer()
        self.registry = EndpointRegistry(
            self.kafka, self.topics.webhooks, box, settings.registrations_check_s, self._endpoint_changed
        )
        self.outcomes = KafkaOutcomes(self.producer, self.topics, self.registry, self.clock)
        schedule = RetrySchedule(settings.retry_schedule_s, settings.retry_jitter, settings.retry_after_max_s)
        self.scheduler = DeliveryScheduler(
            self.registry,
            HttpSender(session, self.registry.signing_secrets, settings.timeout_s, self.clock),
            self.outcomes,
            schedule,
            clock=self.clock,
            max_in_flight=settings.max_in_flight,
            max_in_flight_per_endpoint=settings.max_in_flight_per_endpoint,
        )
        self.sources = {
            self.topics.postings: events.POSTINGS,
            self.topics.listing_events: events.LISTING_EVENTS,
        }
        self.trackers: dict[tuple[str, int], OffsetTracker] = {}
        self.inbox: dict[int, list[Read]] = {}
        self.arrived: dict[int, asyncio.Event] = {}
        self.finished_lately: dict[int, dict[str, tuple[str, int]]] = {}
        self.generation: dict[int, int] = {}
        self.queueing: dict[int, asyncio.Task[None]] = {}  # partition -> the task queueing its records
        self.background: set[asyncio.Task[None]] = set()
        self.restorer = ThreadPoolExecutor(1, thread_name_prefix="webhooks-restore")
        self.polling: KafkaPolling | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        followers = {
            self.topics.listing_events: f"{self.settings.group}-events",
            self.topics.webhook_replays: f"{self.settings.group}-replays",
        }
        ordered = (self.topics.postings, self.topics.listing_events)
        self.polling = KafkaPolling(
            KafkaClients(self.kafka),
            self.settings.group,
            self.settings.session_timeout_ms,
            self.topics.postings,
            followers,
            self.producer,
            self,
            self.loop,
            ordered,
        )
        reports = _ProducerPolling(self.producer)
        reports.start()
        self.registry.start()
        self.polling.start()
        try:
            while not self._stop.is_set():
                for part in (self.polling, self.registry):
                    if part.failure is not None:
                        raise RuntimeError(f"{type(part).__name__} failed") from part.failure
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.settings.commit_interval_s)
                self._commit()
        finally:
            self.polling.stop()
            await asyncio.to_thread(self.polling.join)  # leaving the group commits what is finished
            self.scheduler.close()
            for task in list(self.background):
                task.cancel()
            self.registry.stop()
            reports.stop()
            self.producer.flush(10)
            self.restorer.shutdown()

    # The polling thread's sink (called on the event loop).

    def take(self, batch: dict[str, list[Message]], read_at: float) -> None:
        for topic, messages in batch.items():
            for message in messages:
                _, partition, offset = coordinates(message)
                tracker = self.trackers.get((topic, partition))
                if tracker is None:
                    continue  # a partition given up meanwhile: its next owner reads it again
                tracker.add(offset)
                if topic == self.topics.webhook_replays:
                    self._spawn(self._replay(partition, self.generation[partition], message, read_at))
                    continue
                self.inbox.setdefault(partition, []).append((topic, message, read_at))
                self.arrived[partition].set()

    async def assigned(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.generation[partition] = self.generation.get(partition, 0) + 1
            self._spawn(self._restore(partition, self.generation[partition]))

    async def revoked(self, partitions: list[int]) -> Offsets:
        gone = set(partitions)
        offsets = self._committable(gone)
        self.scheduler.drop_partitions(gone)
        for partition in gone:
            self.generation[partition] = self.generation.get(partition, 0) + 1
            self.inbox.pop(partition, None)
            self.arrived.pop(partition, None)
            self.finished_lately.pop(partition, None)
            worker = self.queueing.pop(partition, None)
            if worker is not None:
                worker.cancel()  # what it wrote and did not queue, the next owner restores
        for key in [k for k in self.trackers if k[1] in gone]:
            del self.trackers[key]
        return offsets

    # Restoring a partition, then queueing what it reads.

    async def _restore(self, partition: int, generation: int) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                restored = await loop.run_in_executor(self.restorer, pending.restore, self.kafka, partition)
                break
            except Exception:  # Kafka unreachable, a timeout: the partition waits, the others run
                log.exception(
                    "partition %d: restoring its waiting deliveries failed; again in 5 s", partition
                )
                await asyncio.sleep(5)
                if self.generation.get(partition) != generation:
                    return
        await self.registry.wait_caught_up(time.monotonic())  # a waiting delivery's endpoint is known
        if self.generation.get(partition) != generation:
            return
        for delivery in restored.waiting.values():
            self._requeue(delivery, partition)
        self.finished_lately[partition] = restored.finished
        for topic in (*self.sources, self.topics.webhook_replays):
            self.trackers[(topic, partition)] = OffsetTracker()
        self.arrived[partition] = asyncio.Event()
        self.queueing[partition] = self._spawn(self._queue_partition(partition, generation))
        assert self.polling is not None
        self.polling.restored(partition)
        log.info("partition %d: %d deliveries waiting, reading its events", partition, len(restored.waiting))

    def _requeue(self, delivery: WebhookDelivery, partition: int) -> None:
        try:
            event = codec.listing_events().decode(delivery.event)
        except codec.SerializationError as exc:
            log.error("a waiting delivery %s cannot be read and is passed over: %s", delivery.key, exc)
            return
        self.scheduler.add(Queued(delivery, event, partition))

    async def _queue_partition(self, partition: int, generation: int) -> None:
        """Queue the partition's records as they arrive, a batch at a time, in order. A batch is
        what was read once both sources are read as of its newest record's reading: an event
        of one source that happened before one of the batch, but was read a little later from
        the other, is in the same batch, and its lane puts it first."""
        assert self.polling is not None
        arrived = self.arrived[partition]
        while self.generation.get(partition) == generation:
            await arrived.wait()
            arrived.clear()
            inbox = self.inbox.get(partition)
            if not inbox:
                continue
            as_of = await self.polling.caught_up(partition, inbox[-1][2])
            inbox = self.inbox.get(partition, [])
            ready = next((i for i, (_, _, read_at) in enumerate(inbox) if read_at > as_of), len(inbox))
            batch, self.inbox[partition] = inbox[:ready], inbox[ready:]
            if self.inbox[partition]:
                arrived.set()
            await self._queue_batch(partition, generation, batch)

    async def _queue_batch(self, partition: int, generation: int, batch: list[Read]) -> None:
        await self.registry.wait_caught_up(max(read_at for _, _, read_at in batch))
        now = self.clock.now_ms()
        queued: list[Queued] = []
        keys: set[str] = set()
        lately = self.finished_lately.get(partition, {})
        for topic, message, _ in batch:
            source = self.sources[topic]
            try:
                event = events.read(source, message)
            except records.PoisonRecord as exc:
                records.note_poison("webhooks", message, exc.reason)
                continue
            if event is None:
                continue
            raw = message.value() if source == events.LISTING_EVENTS else None
            for endpoint in self.registry.matching(event):
                key = delivery_key(endpoint.id, event.event_id)
                if key in keys or key in lately or self.scheduler.queued(key):
                    continue  # read again after a restart: queued, or delivered, already
                keys.add(key)
                offset = coordinates(message)[2]
                queued.append(self._queued(endpoint, event, raw, source, offset, partition, now))
        await asyncio.gather(*(self.outcomes.queue(q) for q in queued))
        if self.generation.get(partition) != generation:
            return  # given up meanwhile: the next owner restores what was written
        for q in queued:
            self.scheduler.add(q)
            metrics.QUEUE_LAG.observe(max(0.0, (now - q.event.at) / 1000))
        for topic, message, _ in batch:
            self._finish(topic, partition, coordinates(message)[2])

    @staticmethod
    def _queued(
        endpoint: WebhookEndpoint,
        event: ListingEvent,
        raw: bytes | None,
        source: str,
        offset: int,
        partition: int,
        now: int,
        replay_id: str | None = None,
    ) -> Queued:
        encoded = raw if raw is not None else codec.listing_events().encode(event)
        delivery = WebhookDelivery(
            endpoint.id,
            event.event_id,
            event.posting_id,
            encoded,
            source,
            offset,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            replay_id=replay_id,
        )
        return Queued(delivery, event, partition)

    async def _replay(self, partition: int, generation: int, message: Message, read_at: float) -> None:
        offset = coordinates(message)[2]
        try:
            request = records.webhook_replay(message)
        except records.PoisonRecord as exc:
            records.note_poison("webhook-replays", message, exc.reason)
            self._finish(self.topics.webhook_replays, partition, offset)
            return
        await self.registry.wait_caught_up(read_at)
        endpoint = self.registry.get(request.endpoint_id)
        found = (
            []
            if endpoint is None
            else await asyncio.to_thread(replays.events_since, self.kafka, partition, request.since)
        )
        now = self.clock.now_ms()
        queued = [
            self._queued(endpoint, event, None, source, source_offset, partition, now, request.request_id)
            for source, source_offset, event in found
            if endpoint is not None
            and endpoint.takes(event.type, event.employer, event.at)
            and not self.scheduler.queued(delivery_key(endpoint.id, event.event_id))
        ]
        await asyncio.gather(*(self.outcomes.queue(q) for q in queued))
        if self.generation.get(partition) != generation:
            return
        for q in queued:
            self.scheduler.add(q)
        self._finish(self.topics.webhook_replays, partition, offset)
        log.info(
            "replay %s of endpoint %s: %d events of partition %d queued again",
            request.request_id,
            request.endpoint_id,
            len(queued),
            partition,
        )

    # Offsets.

    def _finish(self, topic: str, partition: int, offset: int) -> None:
        tracker = self.trackers.get((topic, partition))
        if tracker is not None:
            tracker.finish(offset)

    def _committable(self, partitions: set[int] | None = None) -> Offsets:
        offsets: Offsets = {}
        for (topic, partition), tracker in self.trackers.items():
            if partitions is not None and partition not in partitions:
                continue
            offset = tracker.committable()
            if offset is not None:
                offsets.setdefault(topic, []).append(TopicPartition(topic, partition, offset))
        return offsets

    def _commit(self) -> None:
        """Commit past every finished prefix, and forget the deliveries finished lately whose
        source is committed past them (their events are never read again)."""
        if self.polling is None:
            return
        offsets = self._committable()
        self.polling.commit(offsets)
        committed = {
            (self.sources.get(tp.topic), tp.partition): tp.offset for tps in offsets.values() for tp in tps
        }
        for partition, lately in self.finished_lately.items():
            for key, (source, offset) in list(lately.items()):
                if offset < committed.get((source, partition), -1):
                    del lately[key]

    def _endpoint_changed(self, endpoint_id: str) -> None:
        """From the endpoints' follower thread, or the loop: lanes of a deleted or disabled
        endpoint stop waiting."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.scheduler.wake, endpoint_id)

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(coroutine)
        self.background.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[None]) -> None:
        self.background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a dispatcher task failed", exc_info=task.exception())


class _ProducerPolling:
    """Serves the producer's delivery reports on a thread of its own (`runtime.outbox.deliver`
    resolves the loop's futures from there)."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self._halt = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webhooks-reports", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._halt.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._halt.is_set():
            self.producer.poll(0.1)
