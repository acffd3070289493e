"""Kafka off the event loop: one thread owns the dispatcher's consumers and polls them.

- the group member over `jobpost.postings` (cooperative-sticky; `posting.accepted` events
  are derived from it), and
- one consumer per follower topic (`jobpost.listing-events`, `jobpost.webhook-replays`),
  each co-partitioned with the postings and assigned by hand the partitions the member
  owns, committing under a group of its own (`<group>-<topic kind>`), so partition p of
  every source, and the deliveries waiting on partition p of `jobpost.webhook-pending`,
  belong to one member. As in the board consumers (`consumers.polling`): the member's
  assignment is cooperative, so a member joining or leaving moves only what moves.

The two sources of a posting's events are read side by side, not at once, so the loop can
ask (`caught_up`) for a moment as of which both are read: each partition's end is asked of
the broker and compared with how far its records (and end-of-partition events, which pass
transaction markers) were handed over; what was committed before that moment is then in the
loop's hands, handed over before the answer.

A newly assigned partition is fetched only once its waiting deliveries are restored: the
rebalance callback assigns nothing and hands the partitions to the loop, which restores
them on a worker thread, then asks this thread to start them (`restored`). A revocation
waits for the loop to drop the partitions' lanes and name the offsets to commit, commits
them, flushes the producer, and unassigns.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from runtime.kafka import (
    coordinates,
    end_offset,
    is_record,
    poll_batch,
    record_lag,
)
from runtime.kafka_clients import KafkaClients

log = logging.getLogger(__name__)

_POLL_S = 0.05
_REVOKE_WAIT_S = 30.0

Offsets = dict[str, list[TopicPartition]]  # topic -> offsets to commit


class Sink(Protocol):
    """The event loop's side."""

    def take(self, records: dict[str, list[Message]], read_at: float) -> None:
        """Records read from Kafka, handed over at `read_at` (monotonic)."""

    async def assigned(self, partitions: list[int]) -> None: ...

    async def revoked(self, partitions: list[int]) -> Offsets:
        """Drop the partitions' work; the offsets to commit, by topic."""


class KafkaPolling:
    def __init__(
        self,
        clients: KafkaClients,
        group: str,
        session_timeout_ms: int,
        member_topic: str,
        followers: dict[str, str],
        producer: Producer,
        sink: Sink,
        loop: asyncio.AbstractEventLoop,
        ordered: tuple[str, ...] = (),
    ) -> None:
        """The member is in `group`; `followers`: topic -> the group its offsets are committed
        under. `ordered`: the topics (the member's, followers) whose reading `caught_up` waits
        for."""
        self.clients = clients
        self.group = group
        self.session_timeout_ms = session_timeout_ms
        self.member_topic = member_topic
        self.follower_groups = followers
        self.producer = producer
        self.sink = sink
        self.loop = loop
        self.failure: BaseException | None = None
        self._commands: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._owned: set[int] = set()
        self._assigned: set[int] = set()
        self.ordered = ordered
        self._read_to: dict[tuple[str, int], int] = {}  # (topic, partition) -> the next offset to read
        self._barriers: dict[int, list[tuple[float, asyncio.Future[float]]]] = {}
        self._thread = threading.Thread(target=self._run, name="webhooks-polling", daemon=True)
        self.consumer: Consumer | None = None
        self.followers: dict[str, Consumer] = {}
        # Ends are asked of a consumer of its own: a broker answers a connection's requests in
        # turn, so one asked of a reading consumer waits behind its fetch (up to its wait).
        self.probe: Consumer | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def commit(self, offsets: Offsets) -> None:
        """Commit what the loop found finished, for partitions still fetched when it runs."""
        self._commands.put(lambda: self._commit(self._fetched(offsets)))

    def caught_up(self, partition: int, read_at: float) -> asyncio.Future[float]:
        """A future of the loop, resolved with a moment (monotonic) at or after `read_at` as of
        which every record of the partition's `ordered` topics committed before it has been
        read and handed to the loop (before the future resolves)."""
        future: asyncio.Future[float] = self.loop.create_future()
        self._commands.put(lambda: self._barriers.setdefault(partition, []).append((read_at, future)))
        return future

    def restored(self, partition: int) -> None:
        """The partition's waiting deliveries are restored: start reading its records."""
        self._commands.put(lambda: self._start(partition))

    def _run(self) -> None:
        try:
            self.consumer = self.clients.member(
                self.group, session_timeout_ms=self.session_timeout_ms, gathered=True, ends=True
            )
            self.probe = self.clients.probe(f"{self.group}-probe")
            for topic, group in self.follower_groups.items():
                self.followers[topic] = self.clients.reader(group, gathered=True, ends=True)
            self.consumer.subscribe(
                [self.member_topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            while not self._stopping.is_set():
                self._serve_commands()
                batch: dict[str, list[Message]] = {}
                own = self._records(poll_batch(self.consumer, 500, _POLL_S))
                if own:
                    batch[self.member_topic] = own
                for topic, follower in self.followers.items() if self._assigned else ():
                    found = self._records(poll_batch(follower, 500, 0))
                    if found:
                        batch[topic] = found
                if batch:
                    self.loop.call_soon_threadsafe(self.sink.take, batch, time.monotonic())
                if self._barriers:
                    self._check_barriers()
        except BaseException as exc:
            log.exception("the webhooks' Kafka polling thread failed")
            self.failure = exc
        finally:
            self._close()

    def _records(self, messages: list[Message]) -> list[Message]:
        """The records among `messages`, noting how far each partition has been read (an
        end-of-partition event says so past transaction markers too)."""
        found = []
        for message in messages:
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                topic, partition, offset = coordinates(message)
                self._read_to[(topic, partition)] = max(offset, self._read_to.get((topic, partition), 0))
            elif is_record(message):
                topic, partition, offset = coordinates(message)
                self._read_to[(topic, partition)] = offset + 1
                found.append(message)
        return found

    def _check_barriers(self) -> None:
        """Resolve the waits of partitions whose `ordered` topics are read to where they
        ended when asked (each partition's end asked of the broker, not cached)."""
        for partition, waiting in list(self._barriers.items()):
            if partition not in self._assigned:
                del self._barriers[partition]
                for _, future in waiting:
                    self.loop.call_soon_threadsafe(future.cancel)
                continue
            asked = time.monotonic()
            try:
                read_to_end = all(
                    self._read_to.get((t, partition), -1) >= self._end(t, partition) for t in self.ordered
                )
            except KafkaException as exc:
                # The partition's leader is gone (a broker killed or paused): its waits stay
                # until a broker answers for it, which the next round asks again.
                log.debug("the end of partition %d not known yet: %s", partition, exc)
                continue
            if not read_to_end:
                continue
            due = [future for read_at, future in waiting if read_at <= asked]
            self._barriers[partition] = [(r, f) for r, f in waiting if r > asked]
            if not self._barriers[partition]:
                del self._barriers[partition]
            for future in due:
                self.loop.call_soon_threadsafe(_settle, future, asked)

    def _end(self, topic: str, partition: int) -> int:
        assert self.probe is not None
        return end_offset(self.probe, topic, partition, timeout=5)

    def _close(self) -> None:
        self._serve_commands()
        try:
            if self.consumer is not None:
                self.consumer.close()  # leaves the group: the revocation commits what is finished
        except (KafkaException, RuntimeError) as exc:
            log.warning("closing the consumer: %s", exc)
        for follower in self.followers.values():
            follower.close()
        if self.probe is not None:
            self.probe.close()

    def _serve_commands(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            command()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.incremental_assign([])  # none yet: each once its deliveries are restored
        numbers = sorted(tp.partition for tp in partitions)
        self._owned |= set(numbers)
        log.info("assigned partitions %s: restoring their waiting deliveries", numbers)
        asyncio.run_coroutine_threadsafe(self.sink.assigned(numbers), self.loop)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, commit=True)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, commit=False)

    def _give_up(self, consumer: Consumer, partitions: list[TopicPartition], *, commit: bool) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        try:
            offsets = asyncio.run_coroutine_threadsafe(self.sink.revoked(numbers), self.loop).result(
                _REVOKE_WAIT_S
            )
        except Exception as exc:  # noqa: BLE001 - the loop is gone or stuck: commit nothing
            log.warning("partitions %s given up without committing: %s", numbers, exc)
            offsets = {}
        if commit:
            self._commit(offsets)
        self.producer.flush(10)  # what the lanes wrote lands before the next owner restores
        fetched = [p for p in numbers if p in self._assigned]
        for key in [k for k in self._read_to if k[1] in numbers]:
            del self._read_to[key]
        self._assigned -= set(numbers)
        self._owned -= set(numbers)
        consumer.incremental_unassign([TopicPartition(self.member_topic, p) for p in fetched])
        for topic, follower in self.followers.items() if fetched else ():
            follower.incremental_unassign([TopicPartition(topic, p) for p in fetched])

    def _start(self, partition: int) -> None:
        if self.consumer is None or partition in self._assigned or partition not in self._owned:
            return  # stopping, started already, or revoked while it was being restored
        self._assigned.add(partition)
        self.consumer.incremental_assign([TopicPartition(self.member_topic, partition)])
        for topic, follower in self.followers.items():
            follower.incremental_assign([TopicPartition(topic, partition)])

    def _fetched(self, offsets: Offsets) -> Offsets:
        return {topic: [tp for tp in tps if tp.partition in self._assigned] for topic, tps in offsets.items()}

    def _commit(self, offsets: Offsets) -> None:
        for topic, tps in offsets.items():
            consumer = self.consumer if topic == self.member_topic else self.followers.get(topic)
            if consumer is None or not tps:
                continue
            try:
                consumer.commit(offsets=tps, asynchronous=False)
            except KafkaException as exc:
                log.warning("commit failed (will retry): %s", exc)
                continue
            if consumer is self.consumer:
                record_lag(consumer, self.group, tps)


def _settle(future: asyncio.Future[float], value: float) -> None:
    if not future.done():
        future.set_result(value)
