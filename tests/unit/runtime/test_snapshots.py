"""A replica's stores copied for a new one: checkpoints taken while they are open, sent as
one tar stream ending in a manifest of their digests, checked file by file as they land,
put in place only where they match and the new replica has no store."""

import hashlib
import io
import json
import tarfile

import pytest

from runtime.kafka import KafkaSettings
from runtime.snapshots import MANIFEST, SnapshotError, _move_into_place, has_state, receive, snapshot_tar
from runtime.stores import PartitionStore, StateSettings, Stores

VIEW = "postings-view/jobpost.postings"


def open_stores(state_dir, name="postings-view", topic="jobpost.postings") -> Stores:
    stores = Stores(StateSettings(dir=state_dir), KafkaSettings(), name, topic)
    for partition in (0, 1):
        store = PartitionStore(stores.path(partition), "cluster/topic")
        store.write([(f"posting-{partition}".encode(), b"text")], checkpoint=40 + partition)
        stores.open[partition] = store
    return stores


def taken(live) -> bytes:
    stores = open_stores(live)
    try:
        data = b"".join(snapshot_tar(live))
        stores.open[0].write([(b"posting-0", b"written after the snapshot")], checkpoint=41)
    finally:
        stores.close()
    return data


def chunks(data: bytes):
    return iter([data[i : i + 1000] for i in range(0, len(data), 1000)])


def members(data: bytes) -> list[tuple[tarfile.TarInfo, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        return [(m, tar.extractfile(m).read() if m.isfile() else b"") for m in tar.getmembers()]


def rebuilt(parts: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:") as tar:
        for info, content in parts:
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return out.getvalue()


def test_a_snapshot_carries_every_open_store_with_its_checkpoint_and_their_digests(tmp_path):
    live, new, landing = tmp_path / "live", tmp_path / "new", tmp_path / "landing"
    data = taken(live)
    names = [m.name for m, _ in members(data)]
    assert names[-1] == MANIFEST
    manifest = json.loads(members(data)[-1][1])["stores"]
    assert sorted(manifest) == [f"{VIEW}/0", f"{VIEW}/1"]
    for info, content in members(data)[:-1]:
        store = "/".join(info.name.split("/")[:3])
        assert manifest[store][info.name[len(store) + 1 :]] == hashlib.sha256(content).hexdigest()

    verified = receive(chunks(data), landing)

    assert verified == [f"{VIEW}/0", f"{VIEW}/1"]
    assert not has_state(new, "postings-view")
    assert _move_into_place(landing, new, verified) == 2
    copied = PartitionStore(new / VIEW / "0", "cluster/topic")
    assert (copied.checkpoint, copied.get(b"posting-0")) == (40, b"text")  # as it was when taken
    copied.close()
    assert not list(live.glob(".snapshot-*"))  # the checkpoints are gone once sent


def test_a_store_whose_bytes_changed_on_the_way_is_not_used(tmp_path):
    parts = members(taken(tmp_path / "live"))
    index = next(i for i, (m, _) in enumerate(parts) if m.name.startswith(f"{VIEW}/1/") and m.size > 0)
    info, content = parts[index]
    parts[index] = (info, bytes([content[0] ^ 1]) + content[1:])  # one bit, same length

    verified = receive(chunks(rebuilt(parts)), tmp_path / "landing")

    assert verified == [f"{VIEW}/0"]  # the other store is whole and used; partition 1 from Kafka


def test_a_store_with_a_file_added_or_missing_is_not_used(tmp_path):
    parts = members(taken(tmp_path / "live"))
    extra = tarfile.TarInfo(f"{VIEW}/0/000099.sst")
    dropped = next(i for i, (m, _) in enumerate(parts) if m.name.startswith(f"{VIEW}/1/"))
    parts = [p for i, p in enumerate(parts) if i != dropped]
    parts.insert(0, (extra, b"planted"))

    assert receive(chunks(rebuilt(parts)), tmp_path / "landing") == []


@pytest.mark.parametrize("cut", ["no-manifest", "half"])
def test_a_stream_cut_short_puts_nothing_in_place(tmp_path, cut):
    data = taken(tmp_path / "live")
    short = rebuilt(members(data)[:-1]) if cut == "no-manifest" else data[: len(data) // 2]
    with pytest.raises((SnapshotError, tarfile.TarError)):
        receive(chunks(short), tmp_path / "landing")


@pytest.mark.parametrize("name", ["../../outside", "/etc/cron.d/x", "postings-view/loose-file"])
def test_a_member_outside_a_store_refuses_the_whole_stream(tmp_path, name):
    parts = members(taken(tmp_path / "live"))
    parts.insert(0, (tarfile.TarInfo(name), b"x"))
    with pytest.raises((SnapshotError, tarfile.TarError)):
        receive(chunks(rebuilt(parts)), tmp_path / "landing")
    assert not (tmp_path / "outside").exists()


def test_a_store_the_new_replica_has_is_never_overwritten(tmp_path):
    landing, state = tmp_path / "landing", tmp_path / "state"
    (landing / "sequencer" / "jobpost.sequencer-state" / "0").mkdir(parents=True)
    mine = state / "sequencer" / "jobpost.sequencer-state" / "0"
    mine.mkdir(parents=True)
    (mine / "CURRENT").write_text("mine")

    assert _move_into_place(landing, state, ["sequencer/jobpost.sequencer-state/0"]) == 0
    assert (mine / "CURRENT").read_text() == "mine"
