"""The consume loop's side of the event loop, with a fake work, a fake producer and the polling
thread replaced by a recorder: restore before fetch, the finished prefix, poison records,
revocation; and the polling thread's own bookkeeping (followers, `caught_up`) over fake clients.
(The polling thread itself meets a real broker in the integration tests of the
board consumers and the indexer.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, Message, TopicPartition

from runtime import consume_thread, records
from runtime.consume_loop import ConsumeLoop, Source
from schemas.topics import Component, Topics
from tests.unit.runtime.partitions import offsets

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
        assert offsets(loop.checkpoint.committable()) == [(POSTINGS, 0, 10)]
        work.finished[10].set_result(None)
        await settle()
        assert offsets(loop.checkpoint.committable()) == [(POSTINGS, 0, 13)]

    scenario(body)


def test_a_poison_record_is_dead_lettered_before_its_offset_is_finished():
    async def body(loop: ConsumeLoop, work: Work, polling: Polling, producer: Producer) -> None:
        loop._assigned([0])
        await settle()
        loop._taken([record(0, b"poison")])
        await settle()
        assert producer.produced == [(TOPICS.dlq(Component.LINKEDIN), b"poison")]
        assert offsets(loop.checkpoint.committable()) == [(POSTINGS, 0, 1)]

    scenario(body)


def test_a_revocation_commits_the_finished_prefix_closes_the_work_and_ignores_it_finishing_late():
    async def body(loop: ConsumeLoop, work: Work, polling: Polling, _: Producer) -> None:
        loop._assigned([0])
        await settle()
        loop._taken([record(0), record(1)])
        work.finished[0].set_result(None)
        await settle()
        assert offsets(await loop._revoked([0])) == [(POSTINGS, 0, 1)]
        assert work.closed == [{0}]
        work.finished[1].set_result(None)  # the work of a partition given up, finishing late
        await settle()
        assert loop.checkpoint.committable() == []

    scenario(body)


EVENTS, REPLAYS = TOPICS.listing_events, TOPICS.webhook_replays


class Client:
    """A consumer the polling thread drives: what it was assigned and committed; as a probe,
    where partitions end."""

    def __init__(self, ends: dict[str, int] | None = None) -> None:
        self.ends = ends or {}
        self.assigned: list[TopicPartition] = []
        self.committed: list[TopicPartition] = []

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned += partitions

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        self.committed += offsets

    def get_watermark_offsets(
        self, tp: TopicPartition, timeout: float = 1, cached: bool = True
    ) -> tuple[int, int]:
        return 0, self.ends.get(tp.topic, 0)


def end_of(topic: str, offset: int) -> Message:
    return Message(topic=topic, partition=0, offset=offset, error=KafkaError(KafkaError._PARTITION_EOF))


def test_each_follower_reads_and_commits_the_partitions_of_its_topic_the_member_owns():
    member, events, replays = Client(), Client(), Client()
    polling = consume_thread.Polling(
        member, POSTINGS, "g", None, [(events, EVENTS), (replays, REPLAYS)], None
    )  # type: ignore[arg-type]
    polling._owned = {0, 1}
    polling._start(1)
    polling._commit([TopicPartition(POSTINGS, 1, 5), TopicPartition(REPLAYS, 1, 2)])

    assert [(offsets(c.assigned), offsets(c.committed)) for c in (member, events, replays)] == [
        ([(POSTINGS, 1, OFFSET_INVALID)], [(POSTINGS, 1, 5)]),
        ([(EVENTS, 1, OFFSET_INVALID)], []),
        ([(REPLAYS, 1, OFFSET_INVALID)], [(REPLAYS, 1, 2)]),
    ]


def test_caught_up_waits_until_each_topic_is_read_to_where_it_ends_and_says_the_ends():
    async def main() -> None:
        probe = Client({POSTINGS: 3, EVENTS: 8})
        polling = consume_thread.Polling(Client(), POSTINGS, "g", None, [(Client(), EVENTS)], probe)  # type: ignore[arg-type]
        polling._loop, polling._fetched = asyncio.get_running_loop(), {0}
        caught_up = polling.caught_up(0, (POSTINGS, EVENTS), asyncio.get_running_loop())
        polling._serve_commands()

        taken = polling._records([record(1), record(2), end_of(EVENTS, 7)])
        polling._check_barriers()
        await settle()
        assert [m.offset() for m in taken] == [1, 2] and not caught_up.done()  # events end at 8

        polling._records([end_of(EVENTS, 8)])  # past a transaction's marker
        polling._check_barriers()
        await settle()
        assert caught_up.result() == {POSTINGS: 3, EVENTS: 8}

        given_up = polling.caught_up(0, (POSTINGS,), asyncio.get_running_loop())
        polling._serve_commands()
        polling._fetched = set()
        polling._check_barriers()
        await settle()
        assert given_up.cancelled()

    asyncio.run(asyncio.wait_for(main(), 5))
