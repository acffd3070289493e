"""The local store's promise: what it holds is the log as of its checkpoint, or nothing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from runtime.stores import _META, PartitionStore, StateLocked

IDENTITY = "cluster-a/topic-1"


def filled(path: Path, n: int = 3000) -> PartitionStore:
    store = PartitionStore(path, IDENTITY)
    for start in range(0, n, 1000):
        store.write([(b"p%06d" % i, os.urandom(1500)) for i in range(start, start + 1000)], start + 1000)
    return store


def test_data_and_checkpoint_survive_a_reopen(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "0", IDENTITY)
    assert store.checkpoint == 0 and store.rebuilt is None
    store.write([(b"a", b"1"), (b"b", b"2")], 17)
    store.write([(b"a", None)])  # a delete without moving the checkpoint
    store.close()

    again = PartitionStore(tmp_path / "0", IDENTITY)
    assert again.checkpoint == 17
    assert again.get(b"a") is None and again.get(b"b") == b"2"
    assert list(again.items()) == [(b"b", b"2")]  # the store's own keys are not data
    assert again.rebuilt is None


def test_state_of_another_cluster_or_topic_is_thrown_away(tmp_path: Path) -> None:
    filled(tmp_path / "0").close()
    other = PartitionStore(tmp_path / "0", "cluster-b/topic-1")
    assert other.checkpoint == 0 and other.get(b"p000001") is None
    assert other.rebuilt is not None and "cluster-a/topic-1" in other.rebuilt


def test_a_truncated_file_is_detected_and_rebuilt(tmp_path: Path) -> None:
    filled(tmp_path / "0").close()  # 4.5 MB: closing flushes it to a table file
    tables = sorted((tmp_path / "0").glob("*.sst"), key=lambda f: f.stat().st_size)
    assert tables, "the data should have reached a table file"
    with tables[-1].open("r+b") as f:
        f.truncate(tables[-1].stat().st_size // 2)

    store = PartitionStore(tmp_path / "0", IDENTITY)
    assert store.rebuilt is not None and store.rebuilt.startswith("unreadable")
    assert store.checkpoint == 0 and list(store.items()) == []


def test_a_checkpoint_ahead_of_the_log_or_behind_its_start_is_not_served(tmp_path: Path) -> None:
    store = filled(tmp_path / "0")  # checkpoint 3000
    store.check_bounds(0, 3000)
    assert store.rebuilt is None and store.get(b"p000001") is not None
    store.check_bounds(0, 2999)  # the topic holds less than the store claims to have read
    assert store.checkpoint == 0 and store.get(b"p000001") is None and "ahead" in (store.rebuilt or "")
    store.close()

    behind = filled(tmp_path / "1")
    behind.check_bounds(3001, 5000)
    assert behind.checkpoint == 0 and "behind" in (behind.rebuilt or "")


def test_a_store_older_than_tombstone_retention_is_rebuilt(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "0", IDENTITY, max_age_s=60)
    store.write([(b"a", b"1")], 5)
    meta = {"identity": IDENTITY, "checkpoint": 5, "written_at": time.time() - 61}
    store._db.put(_META, json.dumps(meta).encode())  # as if last written a minute ago
    store.close()
    again = PartitionStore(tmp_path / "0", IDENTITY, max_age_s=60)
    assert again.checkpoint == 0 and again.get(b"a") is None and "not written" in (again.rebuilt or "")


def test_garbage_metadata_is_rebuilt(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "0", IDENTITY)
    store.write([(b"a", b"1")], 5)
    store._db.put(_META, b"{not json")
    store.close()
    again = PartitionStore(tmp_path / "0", IDENTITY)
    assert again.checkpoint == 0 and again.get(b"a") is None


@pytest.mark.parametrize("n", [0, 1])
def test_an_empty_source_gives_an_empty_store(tmp_path: Path, n: int) -> None:
    store = PartitionStore(tmp_path / str(n), IDENTITY)
    store.check_bounds(0, 0)
    assert store.checkpoint == 0 and store.rebuilt is None


def test_a_store_in_use_is_reported_never_thrown_away(tmp_path: Path) -> None:
    first = filled(tmp_path / "0", 1000)
    with pytest.raises(StateLocked):
        PartitionStore(tmp_path / "0", IDENTITY)
    assert first.get(b"p000001") is not None and first.checkpoint == 1000


def _files_holding(folder: Path, marker: bytes) -> list[str]:
    return sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and marker in p.read_bytes()
    )


def test_what_a_write_erases_is_gone_from_every_file_and_from_a_snapshot_after_it(tmp_path: Path) -> None:
    marker = b"erasure-marker-7f3a"
    store = PartitionStore(tmp_path / "0", IDENTITY)
    store.write([(f"other-{i}".encode(), b"x" * 200) for i in range(2000)], 1)
    store.write([(b"p1", b"title " + marker)], 2)
    store.checkpoint_to(tmp_path / "before")  # a snapshot taken before the delete holds it, as it may
    store.write([(f"more-{i}".encode(), b"y" * 200) for i in range(2000)], 3)
    store.write([(b"p1", b"title " + marker + b" v2")], 4)
    assert _files_holding(tmp_path / "0", marker)  # overwritten, yet still on disk

    store.write([(b"p1", b'{"deleted": true}')], 5, erased=[b"p1"])
    store.checkpoint_to(tmp_path / "after")

    assert _files_holding(tmp_path / "0", marker) == []
    assert _files_holding(tmp_path / "after", marker) == []
    assert _files_holding(tmp_path / "before", marker) != []
    assert store.get(b"p1") == b'{"deleted": true}' and store.get(b"other-7") == b"x" * 200
    store.write([(b"p2", marker)], 6)
    store.write([(b"p2", None)], 7, erased=[b"p2"])  # a delete as well as an overwrite
    assert _files_holding(tmp_path / "0", marker) == [] and store.get(b"p2") is None


def test_an_erasure_waits_for_its_interval_or_a_snapshot_whichever_comes_first(tmp_path: Path) -> None:
    marker = b"erasure-marker-51d0"
    store = PartitionStore(tmp_path / "0", IDENTITY, erase_after_s=0.5)
    store.write([(f"other-{i}".encode(), b"x" * 200) for i in range(2000)], 1)
    store.write([(b"p1", marker)], 2)
    store.write([(b"p1", None)], 3, erased=[b"p1"])
    assert _files_holding(tmp_path / "0", marker)  # not at once: one compaction for what comes within 0.5 s
    deadline = time.monotonic() + 10
    while _files_holding(tmp_path / "0", marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _files_holding(tmp_path / "0", marker) == []

    store.write([(b"p2", marker)], 4)
    store.write([(b"p2", None)], 5, erased=[b"p2"])
    store.checkpoint_to(tmp_path / "snapshot")  # taken before the interval ends: compacts first
    assert _files_holding(tmp_path / "snapshot", marker) == []
    store.write([(b"p3", marker)], 6)
    store.write([(b"p3", None)], 7, erased=[b"p3"])
    store.close()  # a store closed before its interval ends compacts first
    assert _files_holding(tmp_path / "0", marker) == []
