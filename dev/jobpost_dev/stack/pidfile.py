"""Pid files that name one process, not just a number the kernel may hand out again.

A pid file holds the pid and the process's start time (with the boot it belongs to), so
a stale file whose pid now belongs to another process reads as "not running" and that
process is never signalled.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")


@dataclass(frozen=True)
class ProcessIdentity:
    """A pid plus when that process started: two processes never share both."""

    pid: int
    started: str

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity | None:
        """The identity of the live process `pid`, or None when there is none."""
        started = process_start(pid)
        return None if started is None else cls(pid, started)

    def alive(self) -> bool:
        return process_start(self.pid) == self.started


def process_start(pid: int) -> str | None:
    """When process `pid` started, as an opaque token; None when no such process exists."""
    if pid <= 0:
        return None
    if (_PROC / "self" / "stat").exists():
        return _linux_start(pid)
    return _ps_start(pid)


def _linux_start(pid: int) -> str | None:
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    # Field 22 (starttime, clock ticks since boot); the fields after "comm)" start at 3.
    return f"{_boot_id()}:{fields[22 - 3]}"


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return (_PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    return "-"


def _ps_start(pid: int) -> str | None:
    result = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True)
    started = result.stdout.strip()
    return started if result.returncode == 0 and started else None


def read(path: Path) -> ProcessIdentity | None:
    """The identity a pid file records; None when missing, unreadable or in the old pid-only form."""
    try:
        record = json.loads(path.read_text())
        return ProcessIdentity(int(record["pid"]), str(record["started"]))
    except (FileNotFoundError, ValueError, TypeError, KeyError):
        return None


def write(path: Path, identity: ProcessIdentity) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps({"pid": identity.pid, "started": identity.started}) + "\n")
    os.replace(partial, path)
