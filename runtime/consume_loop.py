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
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka import Consumer, Message, Producer, TopicPartition

from runtime import records
from runtime.checkpoint import Checkpoint, OffsetTracker
from runtime.consume_thread import DeliveryReports, Polling
from runtime.dead_letters import dead_letter
from runtime.kafka import coordinates
from runtime.outbox import deliver
from schemas.topics import Component, Topics

log = logging.getLogger(__name__)

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
        self._polling = Polling(
            member, main.topic, group, producer, [(c, s.topic) for c, s in followers], probe
        )
        self._reports = DeliveryReports(producer)
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
