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


def update(version: int, op: Op = Op.UPDATED, employer: str = "acme") -> PostingUpdate:
    return PostingUpdate(
        "p1",
        version,
        op,
        f"p1:{version}",
        f"r{version}",
        Posting(f"T{version}", ""),
        1000 + version,
        1000 + version,
        employer=employer,
    )


def follow(view: PostingsView, store: PartitionStore, partition: int, values: list[bytes | None]) -> None:
    """Hand each record to the view as its follower would, one poll batch each."""
    start = store.checkpoint
    for offset, value in enumerate(values, start):
        record = Message(topic="jobpost.postings", partition=partition, offset=offset, key=b"p1", value=value)
        store.write(view.apply(record), offset + 1, view._erased.pop(partition, set()))


def test_the_view_keeps_each_versions_line_and_only_the_newest_ones(tmp_path):
    view = PostingsView(KafkaSettings())  # never started: nothing connects
    partition = partition_for("p1", view.kafka.partitions)
    store = view.stores.open[partition] = PartitionStore(tmp_path / "postings", "unit-test")
    updates = [update(0, Op.CREATED), *(update(v) for v in range(1, KEPT_VERSIONS + 2))]

    follow(view, store, partition, [codec.posting_updates().encode(u) for u in updates])
    lines = view.versions("p1")

    assert [line.version for line in lines] == list(range(1, 52))[-KEPT_VERSIONS:]  # the newest 50
    assert lines[0] == VersionLine(2, Op.UPDATED, 1002, "T2")
    assert lines[-1] == VersionLine(51, Op.UPDATED, 1051, "T51")


def test_a_deleted_posting_keeps_no_title_in_its_versions_and_only_its_employer(tmp_path):
    view = PostingsView(KafkaSettings())
    partition = partition_for("p1", view.kafka.partitions)
    store = view.stores.open[partition] = PartitionStore(tmp_path / "postings", "unit-test")
    live = [update(0, Op.CREATED), *(update(v) for v in range(1, 60))]
    live[-1] = dataclasses.replace(live[-1], posting=Posting("T59 erasure-marker-1c9e", ""))
    follow(view, store, partition, [codec.posting_updates().encode(u) for u in live])
    assert view.versions("p1")[-1].title == "T59 erasure-marker-1c9e"
    assert any(b"erasure-marker-1c9e" in f.read_bytes() for f in (tmp_path / "postings").iterdir())

    # A DELETED record of a release before erasure carried the text; then the tombstone.
    follow(view, store, partition, [codec.posting_updates().encode(update(60, Op.DELETED)), None])
    lines = view.versions("p1")

    assert [line.version for line in lines] == list(range(11, 61))
    assert {line.title for line in lines} == {""}
    assert lines[-1] == VersionLine(60, Op.DELETED, 1060, "")
    seen = view.get("p1")
    assert seen is not None
    assert (seen.deleted, seen.version, seen.employer, seen.posting) == (True, 60, "acme", None)
    assert not any(b"T5" in value for _, value in store.items())  # no title left anywhere in the store
    # nor in its files (overwritten values stay there until compaction: erasure compacts)
    assert not any(b"erasure-marker-1c9e" in f.read_bytes() for f in (tmp_path / "postings").iterdir())


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
