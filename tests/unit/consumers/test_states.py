"""StoredStates over real stores on disk (no Kafka): what a write may claim of the log."""

from pathlib import Path

from consumers.states import StoredStates
from runtime.kafka import KafkaSettings
from runtime.stores import PartitionStore, StateSettings, Stores
from schemas import codec
from schemas.deliveries import delivery_state
from schemas.model import DeliveryStatus, Destination
from schemas.partitioning import partition_for

PARTITIONS = 3


def stored(tmp_path: Path, open_partitions: range = range(PARTITIONS)) -> StoredStates:
    stores = Stores(StateSettings(dir=tmp_path), KafkaSettings(), "linkedin", "t.deliveries")
    for partition in open_partitions:  # as a restore leaves them, without asking Kafka
        stores.open[partition] = PartitionStore(stores.path(partition), "cluster/topic")
    return StoredStates(stores, Destination.LINKEDIN, PARTITIONS)


def raw(posting_id: str, delivered: int) -> bytes:
    state = delivery_state(
        Destination.LINKEDIN, posting_id, status=DeliveryStatus.DELIVERED, delivered_version=delivered
    )
    return codec.delivery_states().encode(state)


def test_an_acknowledged_state_is_read_back_and_moves_the_checkpoint_past_it(tmp_path):
    states = stored(tmp_path)
    partition = partition_for("a", PARTITIONS)

    states.record(partition, "a", raw("a", 3), offset=41)

    found = states.get("a")
    assert found is not None and found.delivered_version == 3
    assert states.stores.open[partition].checkpoint == 42
    assert states.get("b") is None


def test_a_state_below_the_checkpoint_was_restored_already_and_is_not_written_again(tmp_path):
    states = stored(tmp_path)
    partition = partition_for("a", PARTITIONS)
    states.record(partition, "a", raw("a", 5), offset=100)

    states.record(partition, "a", raw("a", 4), offset=99)

    assert states.get("a").delivered_version == 5  # type: ignore[union-attr]
    assert states.stores.open[partition].checkpoint == 101


def test_nothing_is_kept_for_a_partition_given_up(tmp_path):
    partition = partition_for("a", PARTITIONS)
    states = stored(tmp_path, open_partitions=range(0))

    states.record(partition, "a", raw("a", 1), offset=7)

    assert states.get("a") is None
    assert not states.stores.open


def test_a_store_survives_its_close(tmp_path):
    states = stored(tmp_path)
    partition = partition_for("a", PARTITIONS)
    states.record(partition, "a", raw("a", 2), offset=9)
    states.close()

    reopened = stored(tmp_path)

    assert reopened.get("a").delivered_version == 2  # type: ignore[union-attr]
    assert reopened.stores.open[partition].checkpoint == 10
    reopened.close()
