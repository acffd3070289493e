"""The consume loop's side of the event loop, with a fake work, a fake producer and the polling
thread replaced by a recorder: restore before fetch, the finished prefix, poison records,
revocation. (The polling thread itself meets a real broker in the integration tests of the
board consumers and the indexer.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from confluent_kafka import Message, TopicPartition

from runtime import records
from runtime.consume_loop import ConsumeLoop, Source
from schemas.topics import Component, Topics

TOPICS = Topics("unit")
POSTINGS = TOPICS.postings


class Polling:
    """Records the commands the loop sends the polling thread."""

    def __init__(self) -> None:
        self.fetched: list[int] = []
        self.committed: list[list[TopicPartition]] = []

    def fetch(self, partition: int) -> None:
        self.fetched.append(partition)

    def commit(self, offsets: list[TopicPartition]) -> None:
        self.committed.append(offsets)

    def hold(self, full: bool) -> None: ...


class Producer:
    """Acknowledges every record at once, and keeps it."""

    def __init__(self) -> None:
        self.produced: list[tuple[str, Any]] = []

    def produce(
        self, topic: str, key: Any = None, value: Any = None, on_delivery: Any = None, **_: Any
    ) -> None:
        self.produced.append((topic, value))
        on_delivery(None, Message(topic=topic, partition=0, offset=len(self.produced)))

    def flush(self, timeout: float) -> int:
        return 0


class Work:
    def __init__(self) -> None:
        self.opened: list[int] = []
        self.closed: list[set[int]] = []
        self.may_open = asyncio.Event()
        self.may_open.set()
        self.finished: dict[int, asyncio.Future[None]] = {}

    async def open(self, partition: int) -> None:
        await self.may_open.wait()
        self.opened.append(partition)

    def take(self, message: Message) -> Awaitable[None]:
        if message.value() == b"poison":
            raise records.PoisonRecord("unreadable")
        offset = message.offset()
        assert offset is not None
        done = self.finished[offset] = asyncio.get_running_loop().create_future()
        return done

    def close(self, partitions: set[int]) -> None:
        self.closed.append(partitions)


def record(offset: int, value: bytes = b"ok", partition: int = 0) -> Message:
    return Message(
        topic=POSTINGS, partition=partition, offset=offset, key=b"p", value=value, timestamp=(1, 1)
    )


def scenario(body: Callable[[ConsumeLoop, Work, Polling, Producer], Awaitable[None]]) -> None:
    async def main() -> None:
        work, producer, polling = Work(), Producer(), Polling()
        loop = ConsumeLoop(
            work,  # type: ignore[arg-type]
            producer,  # type: ignore[arg-type]
            TOPICS,
            member=None,  # type: ignore[arg-type]
            main=Source(POSTINGS, "unit", dead_letters=Component.LINKEDIN),
            group="unit-group",
        )
        loop._polling = polling  # type: ignore[assignment]
        await body(loop, work, polling, producer)

    asyncio.run(asyncio.wait_for(main(), 5))


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def test_a_partition_is_read_only_once_its_work_is_open_and_not_at_all_when_revoked_meanwhile():
    async def body(loop: ConsumeLoop, work: Work, polling: Polling, _: Producer) -> None:
        work.may_open.clear()
        loop._assigned([0, 1])
        await settle()
        assert polling.fetched == []
        loop._taken([record(0)])  # fetched before the work was open: not taken
        assert work.finished == {}
        await loop._revoked([1])
        work.may_open.set()
        await settle()
        assert (work.opened, polling.fetched, work.closed) == ([0], [0], [{1}])

    scenario(body)


def test_only_the_finished_prefix_is_committed():
    async def body(loop: ConsumeLoop, work: Work, polling: Polling, _: Producer) -> None:
        loop._assigned([0])
        await settle()
        loop._taken([record(10), record(11), record(12)])
        work.finished[11].set_result(None)
        work.finished[12].set_result(None)
        assert loop.checkpoint.committable() == [TopicPartition(POSTINGS, 0, 10)]
        work.finished[10].set_result(None)
        await settle()
        assert loop.checkpoint.committable() == [TopicPartition(POSTINGS, 0, 13)]

    scenario(body)


def test_a_poison_record_is_dead_lettered_before_its_offset_is_finished():
    async def body(loop: ConsumeLoop, work: Work, polling: Polling, producer: Producer) -> None:
        loop._assigned([0])
        await settle()
        loop._taken([record(0, b"poison")])
        await settle()
        assert producer.produced == [(TOPICS.dlq(Component.LINKEDIN), b"poison")]
        assert loop.checkpoint.committable() == [TopicPartition(POSTINGS, 0, 1)]

    scenario(body)


def test_a_revocation_commits_the_finished_prefix_closes_the_work_and_ignores_it_finishing_late():
    async def body(loop: ConsumeLoop, work: Work, polling: Polling, _: Producer) -> None:
        loop._assigned([0])
        await settle()
        loop._taken([record(0), record(1)])
        work.finished[0].set_result(None)
        await settle()
        assert await loop._revoked([0]) == [TopicPartition(POSTINGS, 0, 1)]
        assert work.closed == [{0}]
        work.finished[1].set_result(None)  # the work of a partition given up, finishing late
        await settle()
        assert loop.checkpoint.committable() == []

    scenario(body)
