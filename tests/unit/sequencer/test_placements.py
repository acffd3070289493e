"""Predicted offsets of a sequencer transaction's new versions, checked against Kafka's."""

from schemas import codec
from schemas.changelog import SequencerState
from sequencer.placements import Placements, corrected_states, with_corrections


class Report:
    """What a delivery report carries, as confluent-kafka's Message gives it."""

    def __init__(self, partition: int, offset: int, key: str, value: bytes | None = b"v") -> None:
        self._partition, self._offset, self._key, self._value = partition, offset, key, value

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def key(self) -> bytes:
        return self._key.encode()

    def value(self) -> bytes | None:
        return self._value


def test_versions_get_the_next_offsets_and_the_next_transaction_follows_the_commit_marker():
    placements = Placements()
    placements.start(0, 100)
    assert [placements.place(0, "a"), placements.place(0, "b")] == [100, 101]
    placements.on_delivery(None, Report(0, 100, "a"))
    placements.on_delivery(None, Report(0, 101, "b"))
    assert placements.settle() == {}
    assert placements.place(0, "c") == 103  # 102 is the commit marker


def test_a_delete_and_its_tombstone_take_an_offset_each_and_only_the_version_is_the_postings():
    placements = Placements()
    placements.start(3, 7)
    assert placements.place(3, "a") == 7  # the DELETED version
    assert placements.place(3, None) == 8  # its tombstone
    placements.on_delivery(None, Report(3, 7, "a"))
    placements.on_delivery(None, Report(3, 8, "a", value=None))
    assert placements.settle() == {}
    assert placements.place(3, "b") == 10


def test_a_version_kafka_put_elsewhere_is_reported_with_where_and_predictions_resume_from_there():
    placements = Placements()
    placements.start(1, 50)  # someone else wrote meanwhile: Kafka appends at 60
    placements.place(1, "a")
    placements.place(1, "b")
    placements.on_delivery(None, Report(1, 60, "a"))
    placements.on_delivery(None, Report(1, 61, "b"))
    assert placements.settle() == {"a": 60, "b": 61}
    assert placements.place(1, "c") == 63
    placements.on_delivery(None, Report(1, 63, "c"))
    assert placements.settle() == {}


def test_partitions_are_predicted_apart_and_a_refusal_is_kept():
    placements = Placements()
    placements.start(0, 0)
    placements.start(1, 10)
    assert (placements.place(0, "a"), placements.place(1, "b")) == (0, 10)
    placements.on_delivery("refused", Report(0, -1, "a"))
    assert placements.failed == ["refused"]
    placements.forget(1)
    placements.discard()
    assert placements.place(0, "c") == 1


def test_mispredicted_states_are_rewritten_with_the_acknowledged_offset():
    def encoded(posting_id: str, offset: int) -> bytes:
        return codec.sequencer_states().encode(SequencerState(posting_id, 1, False, 5, offset))

    changes = {0: [(b"a", encoded("a", 100)), (b"b", encoded("b", 101))], 1: [(b"c", encoded("c", 7))]}
    corrected = corrected_states(changes, {"b": 140})

    assert corrected == {0: [(b"b", encoded("b", 140))]}  # for the changelog
    assert changes[0] == [(b"a", encoded("a", 100)), (b"b", encoded("b", 101))]  # left as it was
    assert with_corrections(changes, corrected) == {  # for the local store
        0: [(b"a", encoded("a", 100)), (b"b", encoded("b", 140))],
        1: [(b"c", encoded("c", 7))],
    }
    assert corrected_states(changes, {}) == {}
    assert with_corrections(changes, {}) == changes
