"""As root, Elasticsearch's folder under the temp dir is unpredictable and checked before reuse,
and handing it to `nobody` never follows a symlink."""

from __future__ import annotations

import os
import stat
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from jobpost_dev import stack
from jobpost_dev.stack.unprivileged import TEMP_PREFIX, chown_tree, temp_base

ME = os.getuid()


@pytest.fixture
def temp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "stack" / "elasticsearch.home"


def _choose(record: Path, owner: int = ME) -> Path:
    return temp_base(record, "elasticsearch-8.19.0", owner=owner, home_owners={ME})


def test_a_new_folder_is_unpredictable_reachable_and_remembered(temp_dir: Path, record: Path) -> None:
    base = _choose(record)

    assert base.parent == temp_dir
    assert base.name.startswith(TEMP_PREFIX) and len(base.name) > len(TEMP_PREFIX) + 4
    assert stat.S_IMODE(base.stat().st_mode) == 0o755
    assert record.read_text().strip() == str(base)
    assert _choose(record) == base


def test_a_recorded_symlink_is_refused(temp_dir: Path, record: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    planted = temp_dir / f"{TEMP_PREFIX}planted"
    planted.symlink_to(target)
    record.parent.mkdir()
    record.write_text(str(planted))

    base = _choose(record)

    assert base != planted and not base.is_symlink()
    assert record.read_text().strip() == str(base)


def test_a_folder_owned_by_someone_else_is_refused(temp_dir: Path, record: Path) -> None:
    first = _choose(record)

    assert _choose(record, owner=ME + 4242) != first


def test_a_folder_others_may_write_to_is_refused(temp_dir: Path, record: Path) -> None:
    first = _choose(record)
    first.chmod(0o777)

    assert _choose(record) != first


def test_a_home_swapped_for_a_symlink_is_refused(temp_dir: Path, record: Path, tmp_path: Path) -> None:
    first = _choose(record)
    (first / "elasticsearch-8.19.0").symlink_to(tmp_path)

    assert _choose(record) != first


def test_a_recorded_path_outside_our_naming_is_ignored(temp_dir: Path, record: Path) -> None:
    record.parent.mkdir()
    record.write_text("/")

    assert _choose(record).name.startswith(TEMP_PREFIX)


Chowns = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def chowns(monkeypatch: pytest.MonkeyPatch) -> Chowns:
    calls: Chowns = []

    def record(path: Any, uid: int, gid: int, **kwargs: Any) -> None:
        calls.append((os.fsdecode(path), kwargs))

    monkeypatch.setattr(os, "chown", record)
    monkeypatch.setattr(os, "lchown", lambda path, uid, gid: calls.append((os.fsdecode(path), {})))
    return calls


def test_chown_tree_never_follows_a_symlink(tmp_path: Path, chowns: Chowns) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("root only")
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "jvm.options").write_text("")
    (home / "config" / "escape").symlink_to(outside)
    (home / "shadow").symlink_to(outside / "secret")

    chown_tree(home, 65534, 65534)

    names = [Path(name).name for name, _ in chowns]
    assert sorted(names) == ["config", "home", "jvm.options"]
    assert all(kwargs.get("follow_symlinks") is False for _, kwargs in chowns)


def test_chown_tree_refuses_a_symlinked_root(tmp_path: Path, chowns: Chowns) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")

    with pytest.raises(stack.StackError):
        chown_tree(tmp_path / "link", 65534, 65534)
    assert chowns == []


def test_unpacking_replaces_a_planted_home_instead_of_writing_through_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: ME + 4242)  # not root: the home stays in the stack dir
    server = stack.ElasticsearchServer(stack.StackSettings(dir=tmp_path / "stack"))
    victim = tmp_path / "victim"
    victim.mkdir()
    server.home.parent.mkdir(parents=True)
    server.home.symlink_to(victim)
    archive = tmp_path / "es.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        info = zipfile.ZipInfo(f"{server.home.name}/bin/elasticsearch")
        info.external_attr = 0o100755 << 16
        zf.writestr(info, "#!/bin/sh\n")

    server.unpack(archive)

    assert not server.home.is_symlink()
    assert os.access(server.home / "bin" / "elasticsearch", os.X_OK)
    assert list(victim.iterdir()) == []
    assert sorted(p.name for p in server.home.parent.iterdir()) == [server.home.name]
