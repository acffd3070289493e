"""Kafka off the event loop: one thread owns the board consumer's two Kafka consumers and
polls them; the event loop (lanes, timers, board calls) never waits for Kafka.

- the group member over `jobpost.postings` (cooperative-sticky), and
- a consumer of `jobpost.<board>.redrive` that follows it: partition p of the requests is
  read by whoever owns partition p of the postings (both keyed by posting id,
  co-partitioned), so a posting's redrive requests reach the lane that holds its versions.
  It is assigned by hand (no group of its own to rebalance) and commits under the group
  `<group>-redrive`. Why not one member subscribed to both topics with the `range`
  assignor, which also puts partition p of both on one member: range is an eager
  protocol, so every member joining or leaving would stop every lane of every member;
  following the cooperative assignment moves only the partitions that move.

A partition newly assigned is not fetched until its delivery states are restored: the
rebalance callback assigns nothing (`incremental_assign([])`, so the client does not
assign by itself) and hands the partitions to the loop, which restores them on a worker
thread and then asks this thread to assign them (`restored`). The callback returns at
once, so a long restore never freezes the lanes nor exceeds `max.poll.interval.ms`; the
partition's records simply start later. A revocation waits for the loop to drop the
partition's lanes and name the offsets to commit, commits them, flushes the producer (what
the lanes wrote lands before the next owner restores), and unassigns what was assigned.

Records go to the loop in batches (`call_soon_threadsafe`); the loop sends commands back
(commit, hold, resume, restored) through a queue this thread serves between polls.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

from runtime.kafka import is_record, poll_batch, record_lag

log = logging.getLogger(__name__)

_POLL_S = 0.05  # the longest a command waits for this thread
_REVOKE_WAIT_S = 30.0


class Sink(Protocol):
    """The event loop's side."""

    def take(self, postings: list[Message], requests: list[Message]) -> None: ...

    async def assigned(self, partitions: list[int]) -> None: ...

    async def revoked(self, partitions: list[int]) -> tuple[list[TopicPartition], list[TopicPartition]]:
        """Drop the partitions' work; the offsets to commit (postings, redrive requests)."""


class KafkaPolling:
    def __init__(
        self,
        member: Consumer,
        requests: Consumer,
        group: str,
        topics: tuple[str, str],
        producer: Producer,
        sink: Sink,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.group = group
        self.postings_topic, self.requests_topic = topics
        self.producer = producer
        self.sink = sink
        self.loop = loop
        self.failure: BaseException | None = None
        self._commands: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._owned: set[int] = set()  # the group gave them to this member
        self._assigned: set[int] = set()  # of those, fetched: restored, and assigned to the client
        self._held = False  # too much is buffered: every partition paused
        self._thread = threading.Thread(target=self._run, name="kafka-polling", daemon=True)
        self.consumer = member
        self.requests = requests

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # Commands from the event loop, run on this thread between polls.

    def commit(self, postings: list[TopicPartition], requests: list[TopicPartition]) -> None:
        """Commit what the loop found finished, for the partitions still fetched when the
        command runs (one revoked meanwhile was committed by its revocation; an older offset
        now could rewind its next owner)."""
        self._commands.put(lambda: self._commit(self._fetched(postings), self._fetched(requests)))

    def hold(self, full: bool) -> None:
        """Pause every partition while too much is buffered, resume once it drained."""
        self._commands.put(lambda: self._hold(full))

    def restored(self, partition: int) -> None:
        """The partition's states are restored: start reading its records."""
        self._commands.put(lambda: self._start(partition))

    def run_on_loop(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run a coroutine on the event loop and wait for its result (this thread only)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(_REVOKE_WAIT_S)

    def _run(self) -> None:
        try:
            self.consumer.subscribe(
                [self.postings_topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            while not self._stopping.is_set():
                self._serve_commands()
                postings = [m for m in poll_batch(self.consumer, 500, _POLL_S) if is_record(m)]
                requests = (
                    [m for m in poll_batch(self.requests, 100, 0) if is_record(m)] if self._assigned else []
                )
                if postings or requests:
                    self.loop.call_soon_threadsafe(self.sink.take, postings, requests)
        except BaseException as exc:
            log.exception("the Kafka polling thread failed")
            self.failure = exc
        finally:
            self._close()

    def _close(self) -> None:
        self._serve_commands()
        try:
            self.consumer.close()  # leaves the group: the revocation commits what is finished
        except (KafkaException, RuntimeError) as exc:
            log.warning("closing the consumer: %s", exc)
        self.requests.close()

    def _serve_commands(self) -> None:
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            command()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.incremental_assign([])  # none yet: each once its states are restored
        numbers = sorted(tp.partition for tp in partitions)
        self._owned |= set(numbers)
        log.info("assigned partitions %s of %s: restoring their states", numbers, self.postings_topic)
        asyncio.run_coroutine_threadsafe(self.sink.assigned(numbers), self.loop)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, commit=True)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, commit=False)  # another member owns them already

    def _give_up(self, consumer: Consumer, partitions: list[TopicPartition], *, commit: bool) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        try:
            postings, requests = self.run_on_loop(self.sink.revoked(numbers))
        except Exception as exc:  # noqa: BLE001 - the loop is gone or stuck: commit nothing
            log.warning("partitions %s given up without committing: %s", numbers, exc)
            postings, requests = [], []
        if commit:
            self._commit(postings, requests)
        self.producer.flush(10)  # what the lanes wrote lands before the next owner restores
        fetched = [p for p in numbers if p in self._assigned]
        self._assigned -= set(numbers)
        self._owned -= set(numbers)
        consumer.incremental_unassign([TopicPartition(self.postings_topic, p) for p in fetched])
        if fetched:
            self.requests.incremental_unassign([TopicPartition(self.requests_topic, p) for p in fetched])

    def _start(self, partition: int) -> None:
        if partition in self._assigned:
            return
        if partition not in self._owned:
            return  # revoked while it was being restored
        self._assigned.add(partition)
        postings = TopicPartition(self.postings_topic, partition)
        self.consumer.incremental_assign([postings])
        self.requests.incremental_assign([TopicPartition(self.requests_topic, partition)])
        if self._held:
            self.consumer.pause([postings])
            self.requests.pause([TopicPartition(self.requests_topic, partition)])

    def _fetched(self, offsets: list[TopicPartition]) -> list[TopicPartition]:
        return [tp for tp in offsets if tp.partition in self._assigned]

    def _commit(self, postings: list[TopicPartition], requests: list[TopicPartition]) -> None:
        for consumer, offsets in ((self.consumer, postings), (self.requests, requests)):
            if not offsets:
                continue
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                log.warning("commit failed (will retry): %s", exc)
                continue
            if consumer is self.consumer:  # jobpost_consumer_lag of the postings' group
                record_lag(consumer, self.group, offsets)

    def _hold(self, full: bool) -> None:
        if full == self._held:
            return
        self._held = full
        for consumer, topic in ((self.consumer, self.postings_topic), (self.requests, self.requests_topic)):
            fetched = [TopicPartition(topic, p) for p in sorted(self._assigned)]
            if fetched:
                (consumer.pause if full else consumer.resume)(fetched)
