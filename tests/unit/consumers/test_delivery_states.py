"""StoredStates over real stores on disk (no Kafka): what a write may claim of the log, and
the index of unresolved dead letters kept beside the states."""

from pathlib import Path

from consumers.delivery_states import StoredStates, unresolved_in
from runtime.kafka import KafkaSettings
from runtime.stores import PartitionStore, StateSettings, Stores
from schemas import codec
from schemas.deliveries import DeliveryState, UnresolvedLetter, delivery_state
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from schemas.partitioning import partition_for

PARTITIONS = 3


def stored(tmp_path: Path, open_partitions: range = range(PARTITIONS)) -> StoredStates:
    stores = Stores(StateSettings(dir=tmp_path), KafkaSettings(), "linkedin", "t.deliveries")
    states = StoredStates(stores, Destination.LINKEDIN, PARTITIONS)
    for partition in open_partitions:  # as a restore leaves them, without asking Kafka
        store = stores.open[partition] = PartitionStore(stores.path(partition), "cluster/topic")
        states.opened(partition, store, unresolved_in(store), {})
    return states


def state(posting_id: str, delivered: int, letters: tuple[UnresolvedLetter, ...] = ()) -> DeliveryState:
    return delivery_state(
        Destination.LINKEDIN,
        posting_id,
        status=DeliveryStatus.DELIVERED,
        delivered_version=delivered,
        unresolved_letters=letters,
    )


def record(states: StoredStates, one: DeliveryState, offset: int) -> None:
    partition = partition_for(one.posting_id, PARTITIONS)
    states.record(partition, one, codec.delivery_states().encode(one), offset)


def test_an_acknowledged_state_is_read_back_and_moves_the_checkpoint_past_it(tmp_path):
    states = stored(tmp_path)

    record(states, state("a", 3), offset=41)

    found = states.get("a")
    assert found is not None and found.delivered_version == 3
    assert states.ready[partition_for("a", PARTITIONS)].checkpoint == 42
    assert states.get("b") is None


def test_a_state_below_the_checkpoint_was_restored_already_and_is_not_written_again(tmp_path):
    states = stored(tmp_path)
    record(states, state("a", 5), offset=100)

    record(states, state("a", 4), offset=99)

    assert states.get("a").delivered_version == 5  # type: ignore[union-attr]
    assert states.ready[partition_for("a", PARTITIONS)].checkpoint == 101


def test_nothing_is_kept_for_a_partition_given_up(tmp_path):
    states = stored(tmp_path)
    states.give_up({partition_for("a", PARTITIONS)})

    record(states, state("a", 1), offset=7)

    assert states.get("a") is None


def test_a_store_survives_its_close(tmp_path):
    states = stored(tmp_path)
    record(states, state("a", 2), offset=9)
    states.close()

    reopened = stored(tmp_path)

    assert reopened.get("a").delivered_version == 2  # type: ignore[union-attr]
    assert reopened.ready[partition_for("a", PARTITIONS)].checkpoint == 10
    reopened.close()


def test_the_oldest_unresolved_letter_is_known_and_forgotten_once_resolved(tmp_path):
    states = stored(tmp_path)
    assert states.oldest_unresolved_letter_at() is None
    record(states, state("a", 0, (UnresolvedLetter(1, 5_000), UnresolvedLetter(2, 7_000))), offset=1)
    record(states, state("b", 0, (UnresolvedLetter(4, 6_000),)), offset=2)
    assert states.oldest_unresolved_letter_at() == 5_000

    record(states, state("a", 2), offset=3)  # version 2 delivered resolves both of a's letters

    assert states.oldest_unresolved_letter_at() == 6_000
    states.close()
    reopened = stored(tmp_path)  # the index is on disk beside the states
    assert {p for letters in reopened.letters.values() for p in letters} == {"b"}
    assert reopened.oldest_unresolved_letter_at() == 6_000
    reopened.close()
