"""The key-ordered delivery runner, used by every destination.

Records of one posting are delivered strictly one after another in offset order; records
of different postings, even on one partition, are delivered concurrently. The limit counts
calls in flight, not postings: a posting waiting for its next attempt holds no worker. An
offset is committed only when every record at or below it is finished (delivered,
dead-lettered or skipped). Retry progress lives in `jobpost.deliveries`, so a restarted
or rebalanced consumer resumes the same attempt count and deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from prometheus_client import Counter

from consumers.config import ConsumerSettings
from consumers.errors import RejectedError, RetryableError
from consumers.offsets import OffsetTracker
from consumers.retry import RetryPolicy
from schemas import codec
from schemas.dead_letters import send_dead_letter
from schemas.deliveries import record_delivery
from schemas.kafka import record_lag
from schemas.replay import replay
from schemas.topics import Topics

log = logging.getLogger(__name__)

DELIVERIES = Counter(
    "jobpost_deliveries_total", "Delivery outcomes by destination", ["destination", "outcome"]
)
ATTEMPTS = Counter("jobpost_delivery_attempts_total", "Board calls by destination", ["destination"])


class Board(Protocol):
    async def upsert(self, update: dict[str, Any]) -> None: ...

    async def close(self, update: dict[str, Any]) -> None: ...


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class _Record:
    message: Message
    update: dict[str, Any] | None

    @property
    def version(self) -> int:
        return -1 if self.update is None else int(self.update["version"])

    @property
    def deletes(self) -> bool:
        return self.update is not None and self.update["op"] == "DELETED"


@dataclass
class _Lane:
    """The queue of one posting's records, worked by one task at a time."""

    records: deque[_Record] = field(default_factory=deque)
    delete_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def superseded(self, record: _Record) -> bool:
        return not record.deletes and any(r.deletes and r.version > record.version for r in self.records)


class DeliveryRunner:
    def __init__(self, settings: ConsumerSettings, board: Board, policy: RetryPolicy | None = None) -> None:
        self.settings = settings
        self.board = board
        self.destination = settings.destination
        self.policy = policy or RetryPolicy(settings.retry)
        self.topics = Topics(settings.kafka.topic_prefix)
        self.states: dict[str, dict[str, Any]] = {}  # posting id -> its DeliveryState here
        self.lanes: dict[str, _Lane] = {}
        self.trackers: dict[int, OffsetTracker] = {}
        self.in_flight = asyncio.Semaphore(settings.max_in_flight)
        self.paused = False
        self._stop = asyncio.Event()
        self.consumer: Consumer | None = None
        self.producer = Producer(settings.kafka.producer_config())

    def stop(self) -> None:
        self._stop.set()

    async def run(self) -> None:
        kafka = self.settings.kafka
        self.consumer = Consumer(
            kafka.consumer_config(
                self.settings.group, **{"partition.assignment.strategy": "cooperative-sticky"}
            )
        )
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
                self.producer.poll(0)
                self._apply_backpressure()
                if time.monotonic() - last_commit >= self.settings.commit_interval_s:
                    self._commit()
                    last_commit = time.monotonic()
        finally:
            for lane in self.lanes.values():
                if lane.task:
                    lane.task.cancel()
            self._commit()
            self.consumer.close()
            self.producer.flush(10)

    # Kafka side: records in, offsets out.

    def _take(self, message: Message) -> None:
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF and not error.retriable():
                raise KafkaException(error)
            return
        tracker = self.trackers.setdefault(message.partition(), OffsetTracker())
        tracker.add(message.offset())
        value = message.value()
        record = _Record(message, codec.posting_updates().decode(value) if value is not None else None)
        key = message.key().decode()
        lane = self.lanes.setdefault(key, _Lane())
        lane.records.append(record)
        if record.deletes:
            lane.delete_arrived.set()
        if lane.task is None:
            lane.task = asyncio.create_task(self._work(key, lane))

    def _finish(self, record: _Record) -> None:
        tracker = self.trackers.get(record.message.partition())
        if tracker is not None:
            tracker.finish(record.message.offset())

    def _commit(self) -> None:
        offsets = [
            TopicPartition(self.topics.postings, partition, offset)
            for partition, tracker in self.trackers.items()
            if (offset := tracker.committable()) is not None
        ]
        if not offsets or self.consumer is None:
            return
        self.producer.flush(10)  # delivery states first: they say what the offsets stand for
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
        prefix = f"{self.destination}/".encode()

        def fold(message: Message) -> None:
            key = message.key()
            if key is not None and key.startswith(prefix):
                value = message.value()
                posting_id = key[len(prefix) :].decode()
                if value is None:
                    self.states.pop(posting_id, None)
                else:
                    self.states[posting_id] = codec.delivery_states().decode(value)

        replay(self.settings.kafka, self.topics.deliveries, [tp.partition for tp in partitions], fold)
        for tp in partitions:
            self.trackers[tp.partition] = OffsetTracker()
        if self.paused:
            consumer.pause(partitions)
        log.info("%s owns partitions %s", self.destination, sorted(self.trackers))

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._commit()
        gone = {tp.partition for tp in partitions}
        for key, lane in list(self.lanes.items()):
            if lane.records and lane.records[0].message.partition() in gone:
                if lane.task:
                    lane.task.cancel()
                del self.lanes[key]
        for partition in gone:
            self.trackers.pop(partition, None)

    # Board side: one posting's records, in order.

    async def _work(self, key: str, lane: _Lane) -> None:
        try:
            while lane.records:
                record = lane.records[0]
                await self._deliver(record, lane)
                lane.records.popleft()
                self._finish(record)
        finally:
            lane.task = None
            if not lane.records and self.lanes.get(key) is lane:
                del self.lanes[key]

    async def _deliver(self, record: _Record, lane: _Lane) -> None:
        update = record.update
        if update is None:
            return  # a tombstone: the DELETED version before it is what we act on
        posting_id = update["posting_id"]
        state = self.states.get(posting_id, {})
        delivered = state.get("delivered_version")
        if delivered is not None and record.version <= delivered:
            DELIVERIES.labels(self.destination, "replayed").inc()
            return
        if state.get("status") == "FAILED" and state.get("pending_version") == record.version:
            DELIVERIES.labels(self.destination, "replayed").inc()
            return  # dead-lettered already, before a restart or rebalance replayed it
        resuming = state.get("pending_version") == record.version and state.get("status") == "RETRYING"
        attempts = int(state.get("attempts", 0)) if resuming else 0
        first = state.get("first_attempt_at") if resuming else None
        if resuming and state.get("next_attempt_at"):
            await self._wait(lane, (state["next_attempt_at"] - now_ms()) / 1000)
        while True:
            if lane.superseded(record):
                DELIVERIES.labels(self.destination, "superseded").inc()
                return
            first = first or now_ms()
            try:
                async with self.in_flight:
                    ATTEMPTS.labels(self.destination).inc()
                    await (self.board.close(update) if record.deletes else self.board.upsert(update))
            except RejectedError as exc:
                self._dead_letter(record, str(exc), attempts + 1, first)
                return
            except RetryableError as exc:
                attempts += 1
                wait = self.policy.next_wait(attempts, (now_ms() - first) / 1000, exc.retry_after_s)
                if wait is None:
                    self._dead_letter(record, f"retries spent: {exc}", attempts, first)
                    return
                self._write_state(record, "RETRYING", attempts, first, now_ms() + int(wait * 1000), str(exc))
                context = {
                    "posting_id": update["posting_id"],
                    "version": record.version,
                    "destination": self.destination,
                }
                log.info("attempt %d failed, next in %.1f s: %s", attempts, wait, exc, extra=context)
                await self._wait(lane, wait)
                continue
            self._write_state(
                record, "CLOSED" if record.deletes else "DELIVERED", attempts + 1, first, None, None
            )
            DELIVERIES.labels(self.destination, "delivered").inc()
            return

    async def _wait(self, lane: _Lane, seconds: float) -> None:
        """Sleep before the next attempt, cut short when a DELETE of the posting arrives."""
        if seconds <= 0:
            return
        lane.delete_arrived.clear()
        if any(r.deletes for r in list(lane.records)[1:]):
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(lane.delete_arrived.wait(), seconds)

    def _write_state(
        self,
        record: _Record,
        status: str,
        attempts: int,
        first: int | None,
        next_at: int | None,
        error: str | None,
    ) -> None:
        assert record.update is not None
        posting_id = record.update["posting_id"]
        done = status in ("DELIVERED", "CLOSED")
        self.states[posting_id] = record_delivery(
            self.producer,
            self.topics.deliveries,
            record.message.partition(),
            destination=self.destination,
            posting_id=posting_id,
            status=status,
            delivered_version=record.version
            if done
            else self.states.get(posting_id, {}).get("delivered_version"),
            pending_version=None if done else record.version,
            attempts=attempts,
            first_attempt_at=first,
            next_attempt_at=next_at,
            last_error=error,
        )

    def _dead_letter(self, record: _Record, error: str, attempts: int, first: int | None) -> None:
        message = record.message
        DELIVERIES.labels(self.destination, "dead_lettered").inc()
        dlq = self.topics.dlq(self.destination)
        send_dead_letter(
            self.producer, dlq, self.destination, message, error, attempts=attempts, first_attempt_ms=first,
            version=record.version,
        )  # fmt: skip
        self._write_state(record, "FAILED", attempts, first, None, error)
