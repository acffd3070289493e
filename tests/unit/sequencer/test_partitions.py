"""A session's partitions from the group's assignment to serving them: a new one waits for
its previous owner's transactions without holding up the others, and is assigned at its
committed offset only once restored."""

import pytest
from confluent_kafka import OFFSET_BEGINNING, TopicPartition

from sequencer.config import SequencerSettings
from sequencer.domain import PartitionState
from sequencer.partitions import AssignmentLost, Partitions
from sequencer.placements import Placements

COMMANDS = "jobpost.commands"


class FakeConsumer:
    def __init__(self, committed: dict[int, int]) -> None:
        self.assigned: dict[int, int] = {}  # what the consumer reads: partition -> from offset
        self.committed_offsets = committed

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            assert tp.partition not in self.assigned
            self.assigned[tp.partition] = tp.offset

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            del self.assigned[tp.partition]

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(COMMANDS, n) for n in self.assigned]

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        return [
            TopicPartition(tp.topic, tp.partition, self.committed_offsets.get(tp.partition, -1001))
            for tp in partitions
        ]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float, cached: bool) -> tuple[int, int]:
        return 0, 40  # where jobpost.postings ends


class FakeStores:
    def __init__(self) -> None:
        self.closed: list[int] = []

    def close(self, number: int) -> None:
        self.closed.append(number)


class FakeRestorer:
    def __init__(self) -> None:
        self.open: set[int] = set()  # partitions a previous owner's transaction is open on
        self.restored: list[int] = []
        self.stores = FakeStores()

    def settled(self, number: int) -> bool:
        return number not in self.open

    def restore(self, number: int) -> PartitionState:
        self.restored.append(number)
        return PartitionState()


def partitions(committed: dict[int, int]) -> tuple[Partitions, FakeConsumer, FakeRestorer, list[int]]:
    consumer, restorer, published = FakeConsumer(committed), FakeRestorer(), []
    owned = Partitions(
        SequencerSettings(),
        consumer,
        restorer,
        Placements(),
        lambda: published.append(1),  # type: ignore[arg-type]
    )
    return owned, consumer, restorer, published


def settle(owned: Partitions) -> None:
    """Call advance until it has nothing left it can serve."""
    for _ in range(10):
        owned._checked_at = 0.0  # as if its pause between checks had passed
        owned.advance()


def test_a_new_partition_is_read_only_once_restored_and_from_its_committed_offset():
    owned, consumer, restorer, _ = partitions({0: 17})
    owned.on_assign(consumer, [TopicPartition(COMMANDS, 0), TopicPartition(COMMANDS, 1)])  # type: ignore[arg-type]
    assert consumer.assigned == {}  # nothing is read before its state is
    assert set(owned.waiting) == {0, 1}

    settle(owned)

    assert consumer.assigned == {0: 17, 1: OFFSET_BEGINNING}  # 1 has no committed offset yet
    assert restorer.restored == [0, 1]
    assert set(owned.states) == {0, 1} and not owned.waiting


def test_a_partition_with_an_open_transaction_waits_and_the_others_are_served():
    owned, consumer, restorer, _ = partitions({0: 5, 1: 9})
    owned.on_assign(consumer, [TopicPartition(COMMANDS, 0)])  # type: ignore[arg-type]
    settle(owned)
    restorer.open = {1}  # a dead member's transaction, until its timeout
    owned.on_assign(consumer, [TopicPartition(COMMANDS, 1)])  # type: ignore[arg-type]

    settle(owned)
    assert consumer.assigned == {0: 5}
    assert set(owned.states) == {0} and set(owned.waiting) == {1}

    restorer.open = set()
    settle(owned)
    assert consumer.assigned == {0: 5, 1: 9}


def test_one_partition_is_restored_per_turn_so_the_served_ones_go_on_between():
    owned, consumer, restorer, _ = partitions({})
    owned.on_assign(consumer, [TopicPartition(COMMANDS, n) for n in range(3)])  # type: ignore[arg-type]
    owned.advance()
    assert restorer.restored == [0]


def test_a_revoked_partition_is_dropped_whether_served_or_waiting():
    owned, consumer, restorer, _ = partitions({})
    owned.on_assign(consumer, [TopicPartition(COMMANDS, 0)])  # type: ignore[arg-type]
    settle(owned)
    restorer.open = {1}
    owned.on_assign(consumer, [TopicPartition(COMMANDS, 1)])  # type: ignore[arg-type]

    owned.on_revoke(consumer, [TopicPartition(COMMANDS, 0), TopicPartition(COMMANDS, 1)])  # type: ignore[arg-type]

    assert consumer.assigned == {} and not owned.states and not owned.waiting
    assert sorted(restorer.stores.closed) == [0, 1]


def test_a_lost_assignment_ends_the_session():
    owned, consumer, _, _ = partitions({})
    owned.on_assign(consumer, [TopicPartition(COMMANDS, 0)])  # type: ignore[arg-type]
    settle(owned)
    owned.on_lost(consumer, [TopicPartition(COMMANDS, 0)])  # type: ignore[arg-type]
    with pytest.raises(AssignmentLost):
        owned.advance()
