from consumers.offsets import OffsetTracker


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
