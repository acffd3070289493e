"""The Kafka side of the webhooks: events in, deliveries queued durably. It is a work of the
consume loop (`runtime.consume_loop`), which reads `jobpost.postings` as a group member and
follows `jobpost.listing-events` and `jobpost.webhook-replays` partition by partition,
restores a partition (`open`) before its records are read, and commits past the records
this work finished.

Each event read (a board's from `jobpost.listing-events`, `posting.accepted` from each
version on `jobpost.postings`) is matched against its employer's endpoints once they are
known as of its reading (`webhooks.endpoints`); for each match a delivery is written to
`jobpost.webhook-pending` and, once Kafka acknowledged every one of a batch, queued in its
lane (`webhooks.lanes`) and the record finished. So a restart loses nothing: what was read
but not queued is read again, what was queued is restored from `jobpost.webhook-pending`
(`webhooks.pending`), and what was delivered since its source was last committed (before
the restart or after it) is recognised and not sent again.

A partition's records are queued by one task at a time, in the order they were read, a batch
once both sources are read to where they ended when asked (`ConsumeLoop.caught_up`), so the
events of a posting from the two sources reach its lanes together and in order (a lane
orders each source by offset and the two by the events' times). A replay request reads the
partition's sources from a time on a worker thread and queues the endpoint's events it
finds, beside the live ones.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from confluent_kafka import Consumer, Message, TopicPartition

from runtime import records
from runtime.consume_loop import ConsumeLoop, Source
from runtime.kafka import coordinates
from runtime.kafka_clients import KafkaClients
from runtime.webhook_secrets import SecretBox
from schemas import codec
from schemas.listing_events import ListingEvent
from schemas.topics import Topics
from schemas.webhooks import WebhookDelivery, WebhookEndpoint, WebhookReplay, delivery_key
from webhooks import events, metrics, pending, replays
from webhooks.clock import Clock, SystemClock
from webhooks.config import DispatcherSettings
from webhooks.endpoints import EndpointRegistry
from webhooks.lanes import DeliveryScheduler, Queued
from webhooks.outcomes import KafkaOutcomes
from webhooks.schedule import RetrySchedule
from webhooks.sender import HttpSender

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class _Read:
    """An event read, waiting for its partition's next batch."""

    topic: str
    offset: int
    event: ListingEvent
    raw: bytes | None  # a board's event as written (`posting.accepted` is encoded when queued)
    read_at: float  # monotonic
    finished: asyncio.Future[None]


@dataclass(eq=False)
class _Partition:
    """What the dispatcher holds of a partition it reads."""

    # delivery key -> (source, offset): what finished, as restored (`pending.Restored`) and
    # since, until its source is committed past it (`Dispatcher._committed`)
    finished_lately: dict[str, tuple[str, int]]
    inbox: list[_Read] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)  # queueing its batches, its replays


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
        self.clients = KafkaClients(settings.kafka)
        self.producer = self.clients.producer()
        self.registry = EndpointRegistry(
            self.kafka, self.topics.webhooks, box, settings.registrations_check_s, self._endpoint_changed
        )
        self.outcomes = KafkaOutcomes(
            self.producer, self.topics, self.registry, self.clock, on_finished=self._finished
        )
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
        self.partitions: dict[int, _Partition] = {}
        self.restorer = ThreadPoolExecutor(1, thread_name_prefix="webhooks-restore")
        self.consume: ConsumeLoop | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop = asyncio.Event()

    def stop(self) -> None:
        self._stop.set()
        if self.consume is not None:
            self.consume.stop()

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.consume = consume = self._consume_loop()
        if self._stop.is_set():
            consume.stop()
        self.registry.start()
        watch = asyncio.create_task(self._watch_registry(consume))
        try:
            await consume.run()
        finally:
            watch.cancel()
            self.scheduler.close()
            self.close(set(self.partitions))
            self.registry.stop()
            self.restorer.shutdown()
        if self.registry.failure is not None:
            raise RuntimeError("EndpointRegistry failed") from self.registry.failure

    def _consume_loop(self) -> ConsumeLoop:
        settings, clients, group = self.settings, self.clients, self.settings.group

        def follower(topic: str, kind: str, reader: str) -> tuple[Consumer, Source]:
            consumer = clients.reader(f"{group}-{kind}", gathered=True, ends=True)
            return consumer, Source(topic, reader, dead_letters=None)

        return ConsumeLoop(
            self,
            self.producer,
            self.topics,
            member=clients.member(
                group, session_timeout_ms=settings.session_timeout_ms, gathered=True, ends=True
            ),
            main=Source(self.topics.postings, "webhooks", dead_letters=None),
            group=group,
            followers=[
                follower(self.topics.listing_events, "events", "webhooks"),
                follower(self.topics.webhook_replays, "replays", "webhook-replays"),
            ],
            probe=clients.probe(f"{group}-probe"),  # for the both-sources barrier
            commit_interval_s=settings.commit_interval_s,
            # A batch waits until both sources are read to their ends: paused, they never are.
            max_buffered=None,
            on_commit=self._committed,
        )

    async def _watch_registry(self, consume: ConsumeLoop) -> None:
        while self.registry.failure is None:
            await asyncio.sleep(self.settings.commit_interval_s)
        consume.stop()

    # The consume loop's work.

    async def open(self, partition: int) -> None:
        """Restore the partition's waiting deliveries into their lanes."""
        loop = asyncio.get_running_loop()
        restored = await loop.run_in_executor(self.restorer, pending.restore, self.kafka, partition)
        await self.registry.wait_caught_up(time.monotonic())  # a waiting delivery's endpoint is known
        for delivery in restored.waiting.values():
            self._requeue(delivery, partition)
        state = self.partitions[partition] = _Partition(restored.finished)
        self._spawn(state, self._queue_partition(partition, state)).add_done_callback(_log_failure)
        log.info("partition %d: %d deliveries waiting, reading its events", partition, len(restored.waiting))

    def take(self, message: Message) -> Awaitable[None]:
        topic, partition, offset = coordinates(message)
        state = self.partitions[partition]
        if topic == self.topics.webhook_replays:
            request = records.webhook_replay(message)
            return self._spawn(state, self._replay(partition, request, time.monotonic()))
        source = self.sources[topic]
        event = events.read(source, message)
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if event is None:
            finished.set_result(None)  # a postings tombstone: its DELETED version was the event
            return finished
        raw = message.value() if source == events.LISTING_EVENTS else None
        state.inbox.append(_Read(topic, offset, event, raw, time.monotonic(), finished))
        state.arrived.set()
        return finished

    def close(self, partitions: set[int]) -> None:
        """Forget the partitions' lanes and what they read (their next owner restores what
        was written and reads again what was not)."""
        self.scheduler.drop_partitions(partitions)
        for partition in partitions:
            state = self.partitions.pop(partition, None)
            for task in state.tasks if state else ():
                task.cancel()
            for read in state.inbox if state else ():
                read.finished.cancel()

    def _requeue(self, delivery: WebhookDelivery, partition: int) -> None:
        try:
            event = codec.listing_events().decode(delivery.event)
        except codec.SerializationError as exc:
            log.error("a waiting delivery %s cannot be read and is passed over: %s", delivery.key, exc)
            return
        self.scheduler.add(Queued(delivery, event, partition))

    async def _queue_partition(self, partition: int, state: _Partition) -> None:
        """Queue the partition's records as they arrive, a batch at a time, in order. A batch is
        what was committed when both sources were last read to their ends: an event of one
        source that happened before one of the batch, but was read a little later from the
        other, is in the same batch, and its lane puts it first."""
        assert self.consume is not None
        while True:
            await state.arrived.wait()
            state.arrived.clear()
            if not state.inbox:
                continue
            ends = await self.consume.caught_up(partition, self.sources)
            batch = [read for read in state.inbox if read.offset < ends[read.topic]]
            state.inbox = [read for read in state.inbox if read.offset >= ends[read.topic]]
            if state.inbox:
                state.arrived.set()
            if batch:
                await self._queue_batch(partition, state, batch)

    async def _queue_batch(self, partition: int, state: _Partition, batch: list[_Read]) -> None:
        await self.registry.wait_caught_up(max(read.read_at for read in batch))
        now = self.clock.now_ms()
        queued: list[Queued] = []
        keys: set[str] = set()
        for read in batch:
            for endpoint in self.registry.matching(read.event):
                key = delivery_key(endpoint.id, read.event.event_id)
                if key in keys or key in state.finished_lately or self.scheduler.queued(key):
                    continue  # read again after a restart: queued, or delivered, already
                keys.add(key)
                source = self.sources[read.topic]
                queued.append(
                    self._queued(endpoint, read.event, read.raw, source, read.offset, partition, now)
                )
        await asyncio.gather(*(self.outcomes.queue(q) for q in queued))
        for q in queued:
            self.scheduler.add(q)
            metrics.QUEUE_LAG.observe(max(0.0, (now - q.event.at) / 1000))
        for read in batch:
            read.finished.set_result(None)

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

    async def _replay(self, partition: int, request: WebhookReplay, read_at: float) -> None:
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
        for q in queued:
            self.scheduler.add(q)
        log.info(
            "replay %s of endpoint %s: %d events of partition %d queued again",
            request.request_id,
            request.endpoint_id,
            len(queued),
            partition,
        )

    def _finished(self, queued: Queued) -> None:
        """A delivery waits no longer (delivered, dead-lettered, dropped): until its source is
        committed past it, its event may be read again (a delivery restored as waiting after a
        restart, its event not committed before the restart) and must not be queued again."""
        state = self.partitions.get(queued.partition)
        if state is not None:
            state.finished_lately[queued.key] = (queued.delivery.source, queued.delivery.source_offset)

    def _committed(self, offsets: list[TopicPartition]) -> None:
        """Forget the deliveries finished lately whose source is committed past them (their
        events are never read again)."""
        committed = {(self.sources.get(tp.topic), tp.partition): tp.offset for tp in offsets}
        for partition, state in self.partitions.items():
            for key, (source, offset) in list(state.finished_lately.items()):
                if offset < committed.get((source, partition), -1):
                    del state.finished_lately[key]

    def _endpoint_changed(self, endpoint_id: str) -> None:
        """From the endpoints' follower thread, or the loop: lanes of a deleted or disabled
        endpoint stop waiting."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.scheduler.wake, endpoint_id)

    @staticmethod
    def _spawn(state: _Partition, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(work)
        state.tasks.add(task)
        task.add_done_callback(state.tasks.discard)
        return task


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a partition's queueing failed", exc_info=task.exception())
