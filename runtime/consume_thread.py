"""The threads behind a consume loop (`runtime.consume_loop`), so the event loop never runs a
Kafka call that waits: `Polling` owns the group member and its followers and polls them,
handing records to the event loop in batches and serving its commands (commit, hold, fetch,
caught_up) between polls; `DeliveryReports` serves the producer's delivery reports, and is
the only thread that does: reports served by two threads at once can resume their lanes out
of the order Kafka acknowledged them, which a store's checkpoint relies on
(`consumers.delivery_states`). Whoever else waits for the producer waits with `landed`."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from runtime.kafka import IDLE_POLL_S, PollWait, coordinates, end_offset, is_record, poll_batch, record_lag

log = logging.getLogger(__name__)

# The longest a command waits for the polling thread while records come, a partition is held
# or a wait for its end is open; with none of them, up to IDLE_POLL_S (a commit, or the fetch of
# a partition whose store was just opened, may wait that long).
_POLL_S = 0.05
_REVOKE_WAIT_S = 30.0


Taken = Callable[[list[Message]], None]
Assigned = Callable[[list[int]], None]
Revoked = Callable[[list[int]], Coroutine[Any, Any, list[TopicPartition]]]


class Polling:
    """The thread that owns the member and its followers and polls them. Records go to the
    event loop in batches (`call_soon_threadsafe`); the loop sends commands back (commit,
    hold, fetch, caught_up) through a queue this thread serves between polls."""

    def __init__(
        self,
        member: Consumer,
        topic: str,
        group: str,
        producer: Producer,
        followers: list[tuple[Consumer, str]],
        probe: Consumer | None,
    ) -> None:
        self.member = member
        self.topic = topic
        self.group = group
        self.producer = producer
        self.followers = followers
        # Ends are asked of a consumer of its own: a broker answers a connection's requests in
        # turn, so one asked of a reading consumer waits behind its fetch (up to its wait).
        self.probe = probe
        self.failure: BaseException | None = None
        self._commands: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._stopping = threading.Event()
        self._owned: set[int] = set()  # the group gave them to this member
        self._fetched: set[int] = set()  # of those, opened and assigned to the clients
        self._held = False  # too much is unfinished: every partition paused
        self._rebalanced = False  # partitions were assigned in the last poll: commands follow
        self._read_to: dict[tuple[str, int], int] = {}  # (topic, partition) -> the next offset to read
        self._barriers: dict[int, list[tuple[tuple[str, ...], asyncio.Future[dict[str, int]]]]] = {}
        self._thread = threading.Thread(target=self._run, name="kafka-polling", daemon=True)

    def start(
        self, loop: asyncio.AbstractEventLoop, taken: Taken, assigned: Assigned, revoked: Revoked
    ) -> None:
        self._loop, self._on_taken, self._on_assigned, self._on_revoked = loop, taken, assigned, revoked
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    # Commands from the event loop, run on this thread between polls.

    def commit(self, offsets: list[TopicPartition]) -> None:
        """Commit what the loop found finished, for the partitions still fetched when the
        command runs (one revoked meanwhile was committed by its revocation; an older offset
        now could rewind its next owner)."""
        self._commands.put(lambda: self._commit([tp for tp in offsets if tp.partition in self._fetched]))

    def hold(self, full: bool) -> None:
        """Pause every partition while too much is unfinished, resume once it drained."""
        self._commands.put(lambda: self._hold(full))

    def fetch(self, partition: int) -> None:
        """The partition's work is open: start reading its records."""
        self._commands.put(lambda: self._start(partition))

    def caught_up(
        self, partition: int, topics: tuple[str, ...], loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[dict[str, int]]:
        if self.probe is None:
            raise RuntimeError("caught_up needs a probe")
        future: asyncio.Future[dict[str, int]] = loop.create_future()
        self._commands.put(lambda: self._barriers.setdefault(partition, []).append((topics, future)))
        return future

    def _run(self) -> None:
        try:
            self.member.subscribe(
                [self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
            )
            wait = PollWait(_POLL_S)
            while not self._stopping.is_set():
                self._serve_commands()
                self._rebalanced = False
                messages = self._records(poll_batch(self.member, 500, wait.current))
                for follower, _ in self.followers if self._fetched else ():
                    messages += self._records(poll_batch(follower, 500, 0))
                if messages:
                    self._loop.call_soon_threadsafe(self._on_taken, messages)
                if self._barriers:
                    self._check_barriers()
                wait.after(bool(messages) or self._held or bool(self._barriers) or self._rebalanced)
        except BaseException as exc:
            log.exception("the Kafka polling thread failed")
            self.failure = exc
        finally:
            self._close()

    def _records(self, messages: list[Message]) -> list[Message]:
        """The records among `messages`; with a probe, noting how far each partition has been
        read (an end-of-partition event says so past transaction markers too)."""
        found = [message for message in messages if is_record(message)]
        if self.probe is not None:
            for message in messages:
                error = message.error()
                if error is None or error.code() == KafkaError._PARTITION_EOF:
                    topic, partition, offset = coordinates(message)
                    read_to = offset + 1 if error is None else offset
                    self._read_to[(topic, partition)] = max(read_to, self._read_to.get((topic, partition), 0))
        return found

    def _check_barriers(self) -> None:
        """Resolve the waits of partitions read to where they end now (each partition's end
        asked of the broker, not cached)."""
        assert self.probe is not None
        for partition, waiting in list(self._barriers.items()):
            if partition not in self._fetched:
                del self._barriers[partition]
                for _, future in waiting:
                    self._loop.call_soon_threadsafe(future.cancel)
                continue
            unresolved = []
            for topics, future in waiting:
                try:
                    ends = {topic: end_offset(self.probe, topic, partition, timeout=5) for topic in topics}
                except KafkaException as exc:
                    # The partition's leader is gone (a broker killed or paused): the wait
                    # stays until a broker answers for it, which the next round asks again.
                    log.debug("the end of partition %d not known yet: %s", partition, exc)
                    unresolved.append((topics, future))
                    continue
                if all(self._read_to.get((t, partition), -1) >= end for t, end in ends.items()):
                    self._loop.call_soon_threadsafe(_settle, future, ends)
                else:
                    unresolved.append((topics, future))
            if unresolved:
                self._barriers[partition] = unresolved
            else:
                del self._barriers[partition]

    def _close(self) -> None:
        self._serve_commands()
        try:
            self.member.close()  # leaves the group: the revocation commits what is finished
        except (KafkaException, RuntimeError) as exc:
            log.warning("closing the consumer: %s", exc)
        for follower, _ in self.followers:
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
        consumer.incremental_assign([])  # none yet: each once its work is open
        numbers = sorted(tp.partition for tp in partitions)
        self._owned |= set(numbers)
        self._rebalanced = True
        log.info("assigned partitions %s of %s: opening them", numbers, self.topic)
        self._loop.call_soon_threadsafe(self._on_assigned, numbers)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, commit=True)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._give_up(consumer, partitions, commit=False)  # another member owns them already

    def _give_up(self, consumer: Consumer, partitions: list[TopicPartition], *, commit: bool) -> None:
        numbers = sorted(tp.partition for tp in partitions)
        try:
            revoked = asyncio.run_coroutine_threadsafe(self._on_revoked(numbers), self._loop)
            offsets = revoked.result(_REVOKE_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - the loop is gone or stuck: commit nothing
            log.warning("partitions %s given up without committing: %s", numbers, exc)
            offsets = []
        if commit:
            self._commit(offsets)
        landed(self.producer, 10)  # what the work wrote lands before the next owner restores
        fetched = [p for p in numbers if p in self._fetched]
        self._fetched -= set(numbers)
        self._owned -= set(numbers)
        for key in [key for key in self._read_to if key[1] in numbers]:
            del self._read_to[key]
        consumer.incremental_unassign([TopicPartition(self.topic, p) for p in fetched])
        for follower, topic in self.followers if fetched else ():
            follower.incremental_unassign([TopicPartition(topic, p) for p in fetched])

    def _start(self, partition: int) -> None:
        if partition in self._fetched or partition not in self._owned:
            return  # fetched already, or revoked while it was being opened
        self._fetched.add(partition)
        for client, topic in self._clients():
            client.incremental_assign([TopicPartition(topic, partition)])
        if self._held:
            self._pause(partition)

    def _commit(self, offsets: list[TopicPartition]) -> None:
        for consumer, topic in self._clients():
            mine = [tp for tp in offsets if tp.topic == topic]
            if not mine:
                continue
            try:
                consumer.commit(offsets=mine, asynchronous=False)
            except KafkaException as exc:
                # A coordinator on the move after its broker left, a rebalance: the next
                # commit carries these offsets along, and what is read again is harmless.
                log.warning("commit failed (the next one covers it): %s", exc)
                continue
            if consumer is self.member:  # jobpost_consumer_lag of the group
                record_lag(consumer, self.group, mine)

    def _hold(self, full: bool) -> None:
        if full == self._held:
            return
        self._held = full
        for consumer, topic in self._clients():
            fetched = [TopicPartition(topic, p) for p in sorted(self._fetched)]
            if fetched:
                (consumer.pause if full else consumer.resume)(fetched)

    def _pause(self, partition: int) -> None:
        for consumer, topic in self._clients():
            consumer.pause([TopicPartition(topic, partition)])

    def _clients(self) -> list[tuple[Consumer, str]]:
        return [(self.member, self.topic), *self.followers]


def _settle(future: asyncio.Future[dict[str, int]], ends: dict[str, int]) -> None:
    if not future.done():
        future.set_result(ends)


def landed(producer: Producer, within_s: float) -> int:
    """Wait until Kafka acknowledged everything `producer` holds and its reports were served
    (by `DeliveryReports`: this serves none, unlike `flush`); what is left after `within_s`."""
    deadline = time.monotonic() + within_s
    while len(producer) and time.monotonic() < deadline:
        time.sleep(0.01)
    return len(producer)


class DeliveryReports:
    """Serves the producer's delivery reports on a thread of its own: each resolves a future
    of the event loop thread-safely (`runtime.outbox.deliver`)."""

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
            self.producer.poll(IDLE_POLL_S)  # returns at each report
