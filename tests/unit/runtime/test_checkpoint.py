"""Which offsets a consumer may commit: the finished prefix of each partition it reads now."""

from runtime.checkpoint import Checkpoint, OffsetTracker
from tests.unit.runtime.partitions import offsets


def test_commits_only_past_the_longest_finished_prefix():
    tracker = OffsetTracker()
    assert tracker.committable() is None
    for offset in (10, 11, 12, 13):
        tracker.add(offset)
    assert tracker.committable() == 10
    tracker.finish(12)
    tracker.finish(11)
    assert tracker.committable() == 10  # 10 is still in flight
    tracker.finish(10)
    assert tracker.committable() == 13
    tracker.finish(13)
    assert tracker.committable() == 14
    assert len(tracker) == 0


def test_gaps_from_transaction_markers_do_not_block():
    tracker = OffsetTracker()
    tracker.add(4)
    tracker.add(7)  # 5, 6 were markers: never delivered to the consumer
    tracker.finish(7)
    assert tracker.committable() == 4
    tracker.finish(4)
    assert tracker.committable() == 8


def test_the_oldest_unfinished_record_is_known_by_its_kafka_time():
    tracker = OffsetTracker()
    assert tracker.oldest_timestamp() is None
    tracker.add(1, 5_000)
    tracker.add(2, 4_000)  # producers' clocks disagree: the oldest is not always the lowest offset
    tracker.add(3, 6_000)
    assert tracker.oldest_timestamp() == 4_000
    tracker.finish(2)
    assert tracker.oldest_timestamp() == 5_000
    tracker.finish(1)
    tracker.finish(3)
    assert tracker.oldest_timestamp() is None


def test_each_open_partition_of_each_topic_commits_its_own_prefix():
    checkpoint = Checkpoint()
    checkpoint.open(["postings", "requests"], 3)
    postings = checkpoint.track("postings", 3, 10)
    requests = checkpoint.track("requests", 3, 0)
    checkpoint.track("postings", 3, 11)
    assert postings is not None and requests is not None
    postings.finish(11)
    requests.finish(0)
    assert offsets(checkpoint.committable()) == [("postings", 3, 10), ("requests", 3, 1)]
    assert checkpoint.unfinished() == 2  # 11 is finished, but held behind 10


def test_a_record_of_a_partition_not_open_is_not_taken():
    checkpoint = Checkpoint()
    assert checkpoint.track("postings", 0, 5) is None  # assigned, its work not open yet
    checkpoint.open(["postings"], 0)
    assert checkpoint.track("postings", 0, 5) is not None


def test_a_partition_given_up_commits_nothing_more_even_when_its_old_work_finishes():
    checkpoint = Checkpoint()
    checkpoint.open(["postings"], 1)
    old = checkpoint.track("postings", 1, 7)
    assert old is not None
    assert offsets(checkpoint.committable({1})) == [("postings", 1, 7)]  # what a revocation commits
    checkpoint.drop({1})
    checkpoint.open(["postings"], 1)  # assigned again: read again from the committed offset
    new = checkpoint.track("postings", 1, 7)
    old.finish(7)  # the old lane's work, finishing late, is not this reading's
    assert new is not None and offsets(checkpoint.committable()) == [("postings", 1, 7)]
