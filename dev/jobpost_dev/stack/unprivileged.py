"""Running Elasticsearch as `nobody` when jobpost runs as root (Elasticsearch refuses root).

Root hands a folder to `nobody`, so every step here refuses to be steered by someone
else: the temp folder has an unpredictable name and is checked before reuse, and the
change of owner never follows a symlink.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import stat
import tempfile
from collections.abc import Collection
from pathlib import Path

from jobpost_dev.stack.settings import StackError

TEMP_PREFIX = "jobpost-stack-"


def nobody() -> tuple[int, int]:
    entry = pwd.getpwnam("nobody")
    return entry.pw_uid, entry.pw_gid


def world_traversable(path: Path) -> bool:
    """Whether any user can reach `path` (folders not made yet are not counted against it)."""
    path = path.resolve()
    for folder in [*reversed(path.parents), path]:
        with contextlib.suppress(FileNotFoundError):
            if not folder.stat().st_mode & stat.S_IXOTH:
                return False
    return True


def safe_dir(path: Path, owners: Collection[int]) -> bool:
    """A real folder (not a symlink) owned by one of `owners` that no one else may write to."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid in owners and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def temp_base(record: Path, home_name: str, *, owner: int, home_owners: Collection[int]) -> Path:
    """A folder under the temp dir for a home named `home_name`, found again through `record`.

    A new one comes from mkdtemp (unpredictable, made atomically). A recorded one is reused
    only while it is still a real folder of `owner`'s that no one else may write to, and
    its home, when present, a real folder of one of `home_owners`.
    """
    recorded = _recorded(record)
    if recorded is not None and safe_dir(recorded, {owner}):
        home = recorded / home_name
        if not os.path.lexists(home) or safe_dir(home, home_owners):
            return recorded
    base = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    base.chmod(0o755)  # `nobody` must reach the home inside it
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(f"{base}\n")
    return base


def _recorded(record: Path) -> Path | None:
    try:
        path = Path(record.read_text().strip())
    except FileNotFoundError:
        return None
    return path if path.is_absolute() and path.name.startswith(TEMP_PREFIX) else None


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Give `root` and everything under it to uid:gid, never following a symlink.

    os.fwalk walks by folder descriptor, so a folder swapped for a symlink mid-walk is not
    entered; symlinks themselves are skipped.
    """
    if not stat.S_ISDIR(root.lstat().st_mode):
        raise StackError(f"{root} is not a real folder; refusing to change its owner")
    os.chown(root, uid, gid, follow_symlinks=False)
    for _folder, dirnames, filenames, dir_fd in os.fwalk(root, follow_symlinks=False):
        for name in [*dirnames, *filenames]:
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                    continue
                os.chown(name, uid, gid, dir_fd=dir_fd, follow_symlinks=False)
