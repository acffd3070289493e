"""What the postings view keeps of a posting's versions for its timeline (a store of its
own, no Kafka: the records are handed to `apply` as the follower would)."""

import dataclasses
import itertools

from confluent_kafka import Message

from producer_api.read.log_view import ViewStatus
from producer_api.read.timeline import VersionLine
from producer_api.read.views import KEPT_VERSIONS, PostingsView
from runtime.kafka import KafkaSettings
from runtime.stores import PartitionStore
from schemas import codec
from schemas.model import Op, Posting, PostingUpdate
from schemas.partitioning import partition_for


def update(version: int, op: Op = Op.UPDATED) -> PostingUpdate:
    return PostingUpdate("p1", version, op, f"p1:{version}", f"r{version}", Posting(f"T{version}", ""),
                         1000 + version, 1000 + version)  # fmt: skip


def test_the_view_keeps_each_versions_line_and_only_the_newest_ones(tmp_path):
    view = PostingsView(KafkaSettings())  # never started: nothing connects
    partition = partition_for("p1", view.kafka.partitions)
    store = view.stores.open[partition] = PartitionStore(tmp_path / "postings", "unit-test")
    updates = [
        update(0, Op.CREATED),
        *(update(v) for v in range(1, KEPT_VERSIONS + 2)),
        update(52, Op.DELETED),
    ]
    for offset, u in enumerate(updates):
        record = Message(
            topic="jobpost.postings", partition=partition, offset=offset, key=b"p1",
            value=codec.posting_updates().encode(u),
        )  # fmt: skip
        store.write(view.apply(record), offset + 1)

    lines = view.versions("p1")

    assert [line.version for line in lines] == list(range(3, 53))  # the newest 50
    assert lines[0] == VersionLine(3, Op.UPDATED, 1003, "T3")
    assert lines[-1] == VersionLine(52, Op.DELETED, 1052, "T52")


def test_a_posting_is_restoring_until_its_partition_has_caught_up():
    view = PostingsView(KafkaSettings())  # 6 partitions
    on = {p: next(f"p{i}" for i in itertools.count() if partition_for(f"p{i}", 6) == p) for p in range(6)}
    assert all(view.restoring(posting_id) for posting_id in on.values())  # nothing read yet

    view.status = ViewStatus(
        True, {}, dict.fromkeys(range(6), 10), frozenset({2})
    )  # as the follower publishes
    assert [view.restoring(on[p]) for p in range(6)] == [False, False, True, False, False, False]
    assert not view.status.ready

    view.status = dataclasses.replace(view.status, following=False)  # it failed and resumes
    assert [view.restoring(on[p]) for p in range(6)] == [False, False, True, False, False, False]
    view.status = dataclasses.replace(view.status, following=True, behind=frozenset())
    assert view.status.ready and not any(view.restoring(posting_id) for posting_id in on.values())
