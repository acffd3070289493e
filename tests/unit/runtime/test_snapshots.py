"""A replica's stores copied for a new one: checkpoints taken while they are open, sent as
one tar stream, put in place only where the new replica has no store."""

import io
import tarfile

from runtime.kafka import KafkaSettings
from runtime.snapshots import _Body, _move_into_place, has_state, snapshot_tar
from runtime.stores import PartitionStore, StateSettings, Stores


def open_stores(state_dir, name="postings-view", topic="jobpost.postings") -> Stores:
    stores = Stores(StateSettings(dir=state_dir), KafkaSettings(), name, topic)
    for partition in (0, 1):
        store = PartitionStore(stores.path(partition), "cluster/topic")
        store.write([(f"posting-{partition}".encode(), b"text")], checkpoint=40 + partition)
        stores.open[partition] = store
    return stores


def test_a_snapshot_carries_every_open_store_with_its_checkpoint(tmp_path):
    live, new = tmp_path / "live", tmp_path / "new"
    stores = open_stores(live)
    try:
        data = b"".join(snapshot_tar(live))
        stores.open[0].write([(b"posting-0", b"written after the snapshot")], checkpoint=41)
    finally:
        stores.close()
    landing = tmp_path / "landing"
    body = io.BufferedReader(_Body(iter([data[i : i + 1000] for i in range(0, len(data), 1000)])))
    with tarfile.open(fileobj=body, mode="r|") as tar:
        tar.extractall(landing, filter="data")

    assert not has_state(new, "postings-view")
    assert _move_into_place(landing, new) == 2
    assert has_state(new, "postings-view")
    copied = PartitionStore(new / "postings-view" / "jobpost.postings" / "0", "cluster/topic")
    assert (copied.checkpoint, copied.get(b"posting-0")) == (40, b"text")  # as it was when taken
    copied.close()
    assert not list(live.glob(".snapshot-*"))  # the checkpoints are gone once sent


def test_a_store_the_new_replica_has_is_never_overwritten(tmp_path):
    landing, state = tmp_path / "landing", tmp_path / "state"
    (landing / "sequencer" / "jobpost.sequencer-state" / "0").mkdir(parents=True)
    mine = state / "sequencer" / "jobpost.sequencer-state" / "0"
    mine.mkdir(parents=True)
    (mine / "CURRENT").write_text("mine")

    assert _move_into_place(landing, state) == 0
    assert (mine / "CURRENT").read_text() == "mine"
