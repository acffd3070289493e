"""The API's views keep their state on disk per partition: a restart reads only what was
written since, state that cannot be trusted is rebuilt from Kafka (never served), and
readiness names the partitions still being read."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Message

from producer_api.config import ApiSettings
from producer_api.read.title_search import TitleSearch
from producer_api.read.views import PostingsView, PostingView
from producer_api.readiness import Readiness
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.search_server import ElasticsearchSettings
from runtime.stores import PartitionStore, Put, StateSettings
from schemas import codec
from schemas.model import Op, Posting, PostingUpdate
from schemas.partitioning import partition_for
from tests.processes import wait_until

Written = dict[str, PostingView]  # what a reader should see, by posting id


def posting_update(posting_id: str, version: int, op: Op = Op.UPDATED) -> PostingUpdate:
    text = f"{posting_id} v{version} " + "d" * 1500
    return PostingUpdate(
        posting_id,
        version,
        op,
        f"{posting_id}-{version}",
        f"r-{posting_id}-{version}",
        Posting(f"Title {posting_id} v{version}", text),
        1_000_000 + version,
        2_000_000 + version,
    )


def write(
    kafka: KafkaSettings, topic: str, written: Written, changes: list[tuple[str, int | None, Op]]
) -> int:
    """Write PostingUpdates (a version) and tombstones (None) on the posting's partition,
    and note what a reader should then see."""
    producer = KafkaClients(kafka).producer()
    for posting_id, version, op in changes:
        if version is None:
            value = None
            before = written.get(posting_id)
            written[posting_id] = PostingView(
                posting_id,
                before.version if before else -1,
                True,
                None,
                before.last_update_time_millis if before else None,
                before.employer if before else None,  # a deleted posting's owner is kept
            )
        else:
            update = posting_update(posting_id, version, op)
            value = codec.posting_updates().encode(update)
            deleted = op == Op.DELETED
            written[posting_id] = PostingView(
                posting_id,
                version,
                deleted,
                None if deleted else update.posting,
                update.last_update_time_millis,
                update.employer,
            )
        partition = partition_for(posting_id, kafka.partitions)
        producer.produce(topic, key=posting_id.encode(), value=value, partition=partition)
    assert producer.flush(30) == 0
    return len(changes)


def history(n: int) -> list[tuple[str, int | None, Op]]:
    """n postings created; a tenth updated, some deleted, some deleted then tombstoned."""
    ids = [f"p{i:05d}" for i in range(n)]
    changes: list[tuple[str, int | None, Op]] = [(i, 0, Op.CREATED) for i in ids]
    changes += [(i, 1, Op.UPDATED) for i in ids[: n // 10]]
    changes += [(i, 1, Op.DELETED) for i in ids[n // 10 : n // 5]]
    changes += [(i, None, Op.DELETED) for i in ids[n // 10 : n // 10 + n // 20]]  # tombstones
    changes += [(f"never-{i}", None, Op.DELETED) for i in range(5)]  # a tombstone with nothing before
    return changes


@pytest.fixture
def state(tmp_path: Path) -> StateSettings:
    return StateSettings(dir=tmp_path / "state", batch_records=500)


@pytest.fixture
def views(kafka: KafkaSettings, state: StateSettings) -> Iterator[list[PostingsView]]:
    """Start views with `views.append(...)`; each is closed after the test."""
    started: list[PostingsView] = []
    yield started
    for view in started:
        view.close()


def started(views: list[PostingsView], view: PostingsView) -> PostingsView:
    views.append(view)
    view.start()
    wait_until(lambda: view.status.ready, 60, "the view to catch up")
    return view


def assert_answers(view: PostingsView, written: Written) -> None:
    wrong = {i: view.get(i) for i, expected in written.items() if view.get(i) != expected}
    assert not wrong, f"{len(wrong)} postings answered wrongly, e.g. {next(iter(wrong.items()))}"
    assert view.get("p-never-written") is None


def test_a_restart_reads_only_what_was_written_since(kafka, topics, state, views):
    written: Written = {}
    first_count = write(kafka, topics.postings, written, history(3000))
    producer = KafkaClients(kafka).producer()
    producer.produce(topics.postings, key=b"p00001", value=b"not avro", partition=partition_for("p00001", 3))
    producer.flush(10)  # a poison record is skipped, and still counts as read

    first = started(views, PostingsView(kafka, state))
    assert first.records_read == first_count + 1
    assert_answers(first, written)
    first.close()

    later: list[tuple[str, int | None, Op]] = [(f"p{i:05d}", 2, Op.UPDATED) for i in range(200)]
    later += [(f"p{i:05d}", None, Op.DELETED) for i in range(500, 520)]  # deleted before (v1)
    later += [(f"p{i:05d}", 3, Op.DELETED) for i in range(100, 110)]  # updated just before
    later += [(f"n{i:05d}", 0, Op.CREATED) for i in range(50)]
    second_count = write(kafka, topics.postings, written, later)

    second = started(views, PostingsView(kafka, state))
    assert second.records_read == second_count
    assert all(store.rebuilt is None for store in second.stores.open.values())
    assert_answers(second, written)

    second.close()
    third = started(views, PostingsView(kafka, state))  # nothing new: ready at once
    assert third.records_read == 0

    # A second replica on the same folder neither serves nor wipes the first one's state:
    # it reads the log into a folder of its own.
    replica = started(views, PostingsView(kafka, state))
    assert replica.records_read == first_count + 1 + second_count
    assert_answers(replica, written)
    assert third.records_read == 0 and third.get("p00000") == written["p00000"]


def test_state_ahead_of_the_log_or_corrupt_is_rebuilt_not_served(kafka, topics, state, views):
    written: Written = {}
    write(kafka, topics.postings, written, history(3000))
    first = started(views, PostingsView(kafka, state))
    identity = first.stores.identity
    first.close()
    ahead = PartitionStore(first.stores.path(0), identity)
    ahead.write([(b"p-from-nowhere", b"U" + b"\0" * 16)], 10**9)  # ahead of the log
    ahead.close()
    tables = sorted(first.stores.path(1).glob("*.sst"), key=lambda f: f.stat().st_size)
    assert tables, "the data should have reached a table file"
    with tables[-1].open("r+b") as table:
        table.truncate(tables[-1].stat().st_size // 2)

    again = started(views, PostingsView(kafka, state))

    assert "ahead of the log" in (again.stores.open[0].rebuilt or "")
    assert (again.stores.open[1].rebuilt or "").startswith("unreadable")
    assert again.stores.open[2].rebuilt is None
    assert again.get("p-from-nowhere") is None
    assert_answers(again, written)


class StoppingView(PostingsView):
    """A view whose follower waits, before applying any record of `partition`, until the
    test lets it go; and fails once at its `fail_at`th record."""

    def __init__(self, kafka: KafkaSettings, state: StateSettings, partition: int, fail_at: int = -1) -> None:
        super().__init__(kafka, state)
        self.partition = partition
        self.go = threading.Event()
        self.fail_at = fail_at

    def apply(self, message: Message) -> list[Put]:
        if message.partition() == self.partition:
            self.go.wait(30)
        if self.records_read == self.fail_at:
            self.fail_at = -1
            raise RuntimeError("the follower fails once")
        return super().apply(message)


class Commands:
    ready = threading.Event()


def test_readiness_names_the_partitions_still_being_read(kafka, topics, state, views, elasticsearch_url):
    written: Written = {}
    on_two = [c for c in history(1200) if partition_for(c[0], kafka.partitions) == 2]
    write(kafka, topics.postings, written, on_two)  # 0 and 1 hold nothing: read at once
    view = StoppingView(kafka, state, partition=2)
    views.append(view)
    Commands.ready.set()
    search = TitleSearch(ElasticsearchSettings(url=elasticsearch_url), "unused")
    readiness = Readiness(ApiSettings(kafka=kafka), Commands(), [view], None, search)  # type: ignore[arg-type]
    view.start()

    wait_until(lambda: view.status.caught_up == {0, 1}, 30, "partitions 0 and 1 read")
    status = view.status
    assert status.behind == {2} and status.following and not status.ready  # its follower waits
    assert asyncio.run(readiness.check())["kafka"] == f"{topics.postings} catching up on partitions [2]"

    view.go.set()
    wait_until(lambda: view.status.ready, 30, "partition 2 read")
    readiness._cached = None
    assert asyncio.run(readiness.check())["kafka"] is None
    assert_answers(view, written)


def test_a_failed_follower_resumes_from_its_checkpoint(kafka, topics, state, views):
    written: Written = {}
    count = write(kafka, topics.postings, written, history(3000))
    view = StoppingView(kafka, state, partition=-1, fail_at=2500)
    view.go.set()

    started(views, view)

    assert view.fail_at == -1  # it did fail
    # Only the batch being folded when it failed is read again, not the log.
    assert count <= view.records_read <= count + state.batch_records
    assert_answers(view, written)
