"""A coordinator on the move does not end a consumer (the board consumers, the indexer): the
consume loop with its real polling thread, over a fake group member whose first commit fails
as a commit fails while a broker that coordinated the group is gone. The loop keeps running,
and the next commit carries the offsets the failed one did not (`make chaos` saw both
indexers end at once on "Coordinator load in progress")."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from runtime.consume_loop import ConsumeLoop, Source
from schemas.topics import Topics

TOPICS = Topics("unit")
POSTINGS = TOPICS.postings


class Member:
    """A group member given partition 0 at its first poll. `poll` hands out what the test
    queued; the first `failing` commits fail as librdkafka's do while the group's
    coordinator moves."""

    def __init__(self, failing: int) -> None:
        self.failing = failing
        self.failed = 0
        self.committed: list[int] = []  # partition 0's committed offsets, in order
        self.queued: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._on_assign: Callable[..., None] | None = None

    def subscribe(self, topics: list[str], on_assign: Callable[..., None], **_: Any) -> None:
        self._on_assign = on_assign

    def poll(self, timeout: float) -> Message | None:
        if self._on_assign is not None:
            on_assign, self._on_assign = self._on_assign, None
            on_assign(self, [TopicPartition(POSTINGS, 0)])
        try:
            return self.queued.get(timeout=min(timeout, 0.05))
        except queue.Empty:
            return None

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        found: list[Message] = []
        while len(found) < num_messages:
            try:
                found.append(self.queued.get_nowait())
            except queue.Empty:
                break
        return found

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        if self.failed < self.failing:
            self.failed += 1
            raise KafkaException(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS))
        self.committed += [tp.offset for tp in offsets if tp.partition == 0]

    def get_watermark_offsets(self, tp: TopicPartition, cached: bool) -> tuple[int, int]:
        return 0, -1

    def incremental_assign(self, partitions: list[TopicPartition]) -> None: ...

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None: ...

    def close(self) -> None: ...


class Producer:
    def flush(self, timeout: float) -> int:
        return 0

    def poll(self, timeout: float) -> int:
        time.sleep(timeout)  # the delivery reports' thread waits here: nothing is produced
        return 0


class Work:
    """Finishes every record at once."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    async def open(self, partition: int) -> None:
        self.opened.set()

    def take(self, message: Message) -> Awaitable[None]:
        done = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    def close(self, partitions: set[int]) -> None: ...


def record(offset: int) -> Message:
    return Message(topic=POSTINGS, partition=0, offset=offset, key=b"p", value=b"ok", timestamp=(1, 1))


async def until(condition: Callable[[], bool], what: str, deadline_s: float = 5.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {deadline_s} s: {what}"
        await asyncio.sleep(0.01)


async def started(member: Member, work: Work, **options: Any) -> tuple[ConsumeLoop, asyncio.Task[None]]:
    """A consume loop over `member`, running, its partition 0 opened."""
    loop = ConsumeLoop(
        work,  # type: ignore[arg-type]
        Producer(),  # type: ignore[arg-type]
        TOPICS,
        member=member,  # type: ignore[arg-type]
        main=Source(POSTINGS, "unit", dead_letters=None),
        group="unit-group",
        commit_interval_s=0.02,
        **options,
    )
    running = asyncio.create_task(loop.run())
    await until(work.opened.is_set, "partition 0 opened")
    return loop, running


def test_a_failed_commit_does_not_end_the_loop_and_the_next_commit_covers_its_offsets() -> None:
    async def main() -> None:
        member, work = Member(failing=2), Work()
        loop, running = await started(member, work)
        # The coordinator left with its broker: the client reports it as an event, then the
        # commits fail until it is found again.
        member.queued.put(Message(error=KafkaError(KafkaError.NOT_COORDINATOR)))
        for offset in range(5):
            member.queued.put(record(offset))
        await until(lambda: member.failed == 2, "the first two commits failed")
        for offset in range(5, 10):
            member.queued.put(record(offset))
        await until(lambda: 10 in member.committed, "offset 10 committed")

        assert not running.done(), "the consume loop ended on a failed commit"
        assert member.committed[0] >= 5  # the first commit that went through covered the failed ones
        loop.stop()
        await running  # ends without an error

    asyncio.run(asyncio.wait_for(main(), 10))


def test_each_commit_is_heard_with_its_offsets() -> None:
    """What a work may forget once its records are never read again (the webhooks dispatcher's
    deliveries finished lately)."""

    async def main() -> None:
        member, work, heard = Member(failing=0), Work(), list[TopicPartition]()
        loop, running = await started(member, work, on_commit=heard.extend)
        for offset in range(3):
            member.queued.put(record(offset))
        # (TopicPartition's == leaves the offset out.)
        await until(lambda: (POSTINGS, 0, 3) in [(t.topic, t.partition, t.offset) for t in heard], "3 heard")
        loop.stop()
        await running

    asyncio.run(asyncio.wait_for(main(), 10))
