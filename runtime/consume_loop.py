"""The consume → work → commit loop of every consumer group whose work is not a Kafka
transaction (the board consumers, the search indexer, the webhooks dispatcher), as quixstreams keeps its
checkpointing in one room. The sequencer's loop is its own (`sequencer.session`): its
offsets are committed inside its producer's transaction.

What the loop does, so no work has to:

- **Kafka off the event loop.** One thread owns the group member (over the `main` topic)
  and the followers of co-partitioned topics, if any (partition p of each is read by
  whoever owns partition p of `main`; assigned by hand, no group of its own to rebalance,
  each committing under its own group). Why not one member subscribed to both with
  the `range` assignor: range is eager, so every member joining or leaving would stop every
  partition's work on every member; following the cooperative assignment moves only the
  partitions that move. Another thread serves the producer's delivery reports. The event
  loop runs the work, never a Kafka call that waits.
- **Restore before fetch.** A partition assigned is not fetched until `Work.open` brought
  its state up (tried again every 5 s while it fails, as long as the partition is still
  this member's): the rebalance callback assigns nothing (`incremental_assign([])`, so the
  client does not assign by itself) and returns at once, so a long restore never exceeds
  `max.poll.interval.ms`; the partition's records simply start later.
- **Offsets of the finished prefix only** (`runtime.checkpoint`): each record is handed to
  `Work.take`, which returns when it is finished; every `commit_interval_s` the offset after
  each partition's longest finished prefix is committed. What a finished record depends on
  (a delivery state, a dead letter) was acknowledged by Kafka before it finished.
- **Backpressure.** Every partition is paused while `max_buffered` records are unfinished,
  and resumed once half of them are (None: never paused).
- **Read as of now** (`caught_up`, given a `probe`): a work that reads a partition of two
  topics side by side can ask for a moment as of which both are read: each partition's end
  is asked of the broker and compared with how far its records (and end-of-partition
  events, which pass transaction markers) were handed over.
- **Revocation.** The loop stops the partition's opening, `Work.close` forgets its work,
  its finished prefix is committed, and the producer is flushed (what the work wrote lands
  before the next owner restores) before the partition is let go; a partition lost (another
  member owns it already) commits nothing.
- **Poison records.** A record `Work.take` cannot use (`PoisonRecord`) is counted and
  logged, then dead-lettered as it is to its group's dead-letter topic (acknowledged before
  its offset is finished) or, where its source says so, passed over.
- **Committed.** `on_commit` hears the offsets of each periodic commit (what the work may
  forget, since it is never read again).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from runtime import records
from runtime.checkpoint import Checkpoint, OffsetTracker
from runtime.dead_letters import dead_letter
from runtime.kafka import coordinates, end_offset, is_record, poll_batch, record_lag
from runtime.outbox import deliver
from schemas.topics import Component, Topics

log = logging.getLogger(__name__)

_POLL_S = 0.05  # the longest a command waits for the polling thread
_REVOKE_WAIT_S = 30.0
_OPEN_AGAIN_S = 5.0


@dataclass(frozen=True)
class Source:
    """A topic the loop reads, and what becomes of a record of it nobody can use: counted
    under `reader`, then dead-lettered to `dead_letters`' topic (`jobpost.<group>.dlq`), or
    passed over (None: a request nobody can read asks for nothing)."""

    topic: str
    reader: str
    dead_letters: Component | None


class Work(Protocol):
    """What a consumer group does with its records."""

    async def open(self, partition: int) -> None:
        """The partition is this member's: bring up what its work needs before its records
        are read. Cancelled when the partition is revoked meanwhile; raise to be asked again
        in a few seconds."""

    def take(self, message: Message) -> Awaitable[None]:
        """Start the work of one record; the awaitable ends once the record is finished.
        Raise `records.PoisonRecord` for a record that cannot be used."""

    def close(self, partitions: set[int]) -> None:
        """The partitions are no longer this member's: forget their unfinished work (their
        next owner reads it again from the committed offset)."""


class ConsumeLoop:
    def __init__(
        self,
        work: Work,
        producer: Producer,
        topics: Topics,
        *,
        member: Consumer,
        main: Source,
        group: str,
        followers: Sequence[tuple[Consumer, Source]] = (),
        probe: Consumer | None = None,
        commit_interval_s: float = 1.0,
        max_buffered: int | None = 2000,
        on_commit: Callable[[list[TopicPartition]], None] | None = None,
    ) -> None:
        """`followers`: each with the topic it follows; `probe`: a consumer that asks where
        partitions end, for `caught_up` (the member and followers then report ends)."""
        self.work = work
        self.producer = producer
        self.topics = topics
        self.main = main
        self.group = group
        self.sources = {main.topic: main, **{source.topic: source for _, source in followers}}
        self.commit_interval_s = commit_interval_s
        self.max_buffered = max_buffered
        self.on_commit = on_commit
        self.checkpoint = Checkpoint()
        self._polling = _Polling(
            member, main.topic, group, producer, [(c, s.topic) for c, s in followers], probe
        )
        self._reports = _DeliveryReports(producer)
        self._opening: dict[int, asyncio.Task[None]] = {}
        self._letters: set[asyncio.Task[None]] = set()
        self._held = False
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """End `run` (on the event loop's thread)."""
        self._stop.set()

    def caught_up(self, partition: int, topics: Iterable[str]) -> asyncio.Future[dict[str, int]]:
        """Resolved once every record of the partition of `topics` that was committed when
        the broker was asked has been handed to `Work.take` (before this resolves): with the
        end offsets asked, by topic. Asked again while the broker cannot say; cancelled when
        the partition is given up. Needs the loop's `probe`; a partition paused (held) is
        not read to its end until it is resumed."""
        return self._polling.caught_up(partition, tuple(topics), asyncio.get_running_loop())

    def oldest_unfinished_ms(self) -> int | None:
        """When Kafka took the oldest record of `main` read and not finished (ms)."""
        return self.checkpoint.oldest_timestamp(self.main.topic)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._reports.start()
        self._polling.start(loop, self._taken, self._assigned, self._revoked)
        try:
            while not self._stop.is_set():
                if self._polling.failure is not None:
                    raise RuntimeError("Kafka polling failed") from self._polling.failure
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.commit_interval_s)
                offsets = self.checkpoint.committable()
                self._polling.commit(offsets)
                if self.on_commit is not None:
                    self.on_commit(offsets)
                self._apply_backpressure()
        finally:
            self._polling.stop()
            await asyncio.to_thread(self._polling.join)  # leaving the group commits what is finished
            for task in [*self._opening.values(), *self._letters]:
                task.cancel()
            self._reports.stop()
            self.producer.flush(10)

    # On the event loop, from the polling thread.

    def _taken(self, messages: list[Message]) -> None:
        for message in messages:
            topic, partition, offset = coordinates(message)
            tracker = self.checkpoint.track(topic, partition, offset, message.timestamp()[1])
            if tracker is None:
                continue  # a partition given up meanwhile: its next owner reads it again
            try:
                finished = asyncio.ensure_future(self.work.take(message))
            except records.PoisonRecord as exc:
                finished = asyncio.create_task(self._poison(self.sources[topic], message, exc.reason))
                self._letters.add(finished)
                finished.add_done_callback(self._letters.discard)
            _finish_when_done(finished, tracker, offset)

    def _assigned(self, partitions: list[int]) -> None:
        for partition in partitions:
            self._opening[partition] = asyncio.create_task(self._open(partition))

    async def _revoked(self, partitions: list[int]) -> list[TopicPartition]:
        """Forget the partitions' work; the offsets to commit for them."""
        gone = set(partitions)
        for partition in gone:
            opening = self._opening.pop(partition, None)
            if opening is not None:
                opening.cancel()
        offsets = self.checkpoint.committable(gone)
        self.checkpoint.drop(gone)
        self.work.close(gone)
        return offsets

    async def _open(self, partition: int) -> None:
        """Open the partition's work, then start reading its records."""
        while True:
            try:
                await self.work.open(partition)
                break
            except Exception:  # Kafka unreachable, a timeout: the partition waits, the others run
                log.exception(
                    "partition %d: opening failed, trying again in %.0f s", partition, _OPEN_AGAIN_S
                )
                await asyncio.sleep(_OPEN_AGAIN_S)
        self._opening.pop(partition, None)
        self.checkpoint.open(self.sources, partition)
        self._polling.fetch(partition)

    async def _poison(self, source: Source, message: Message, reason: str) -> None:
        records.note_poison(source.reader, message, reason)
        if source.dead_letters is None:
            return
        posting_id = (message.key() or b"").decode(errors="replace")
        letter = dead_letter(self.topics, source.dead_letters, message, reason, posting_id=posting_id)
        await deliver(self.producer, letter)

    def _apply_backpressure(self) -> None:
        if self.max_buffered is None:
            return
        unfinished = self.checkpoint.unfinished()
        if not self._held and unfinished >= self.max_buffered:
            self._held = True
        elif self._held and unfinished < self.max_buffered // 2:
            self._held = False
        else:
            return
        self._polling.hold(self._held)


def _finish_when_done(finished: asyncio.Future[None], tracker: OffsetTracker, offset: int) -> None:
    """The offset is finished once its work is: not when it was cancelled (its partition was
    given up) or failed (a bug: the offset is held, and read again by the next owner)."""

    def done(future: asyncio.Future[None]) -> None:
        if future.cancelled():
            return
        if future.exception() is not None:
            log.error("a record's work failed: its offset is held", exc_info=future.exception())
            return
        tracker.finish(offset)

    if finished.done():
        done(finished)
    else:
        finished.add_done_callback(done)


Taken = Callable[[list[Message]], None]
Assigned = Callable[[list[int]], None]
Revoked = Callable[[list[int]], Coroutine[Any, Any, list[TopicPartition]]]


class _Polling:
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
            while not self._stopping.is_set():
                self._serve_commands()
                messages = self._records(poll_batch(self.member, 500, _POLL_S))
                for follower, _ in self.followers if self._fetched else ():
                    messages += self._records(poll_batch(follower, 500, 0))
                if messages:
                    self._loop.call_soon_threadsafe(self._on_taken, messages)
                if self._barriers:
                    self._check_barriers()
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
        self.producer.flush(10)  # what the work wrote lands before the next owner restores
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


class _DeliveryReports:
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
            self.producer.poll(0.1)
