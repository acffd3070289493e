"""The ports `make run` needs, checked before it starts anything: a taken one is named with
the setting that moves it and what holds it (a pid and its command line, from
/proc/net/tcp and /proc/<pid>/fd, else from `ss -ltnp`; "unknown" when neither can tell,
e.g. another user's process)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"  # where every local server and component listens
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's `st` column


@dataclass(frozen=True)
class Port:
    """A port something of `make run` listens on: what, and the setting that moves it."""

    number: int
    what: str
    setting: str


def taken(port: int, host: str = HOST) -> bool:
    """Whether something listens there: a bind fails. SO_REUSEADDR, as the servers set it, so
    connections of an earlier run still in TIME_WAIT do not count."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def holder(port: int, proc: Path = Path("/proc")) -> str:
    """`pid <n> (<command line>)` of the process listening on `port`, or "unknown"."""
    pid = _pid_from_proc(port, proc) or _pid_from_ss(port)
    if pid is None:
        return "unknown"
    try:
        command = (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        command = ""
    if len(command) > 160:
        command = command[:157] + "..."
    return f"pid {pid} ({command or 'command unknown'})"


def refusals(ports: Iterable[Port], host: str = HOST) -> list[str]:
    """One line for each port wanted twice or taken; none when `make run` may start."""
    lines: list[str] = []
    first_wanted: dict[int, Port] = {}
    for port in ports:
        earlier = first_wanted.setdefault(port.number, port)
        if earlier is not port:
            lines.append(
                f"port {port.number} is wanted twice, by {earlier.what} ({earlier.setting})"
                f" and by {port.what} ({port.setting}); set one of them to move it"
            )
        elif taken(port.number, host):
            lines.append(
                f"port {port.number} ({port.what}) is taken, held by {holder(port.number)};"
                f" {port.setting} moves it"
            )
    return lines


def _pid_from_proc(port: int, proc: Path) -> int | None:
    inodes = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (proc / "net" / table).read_text().splitlines()[1:]:
                fields = line.split()
                # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
                if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    return int(entry.name)
        except OSError:  # gone meanwhile, or another user's
            continue
    return None


def _pid_from_ss(port: int) -> int | None:
    ss = shutil.which("ss")
    if ss is None:
        return None
    try:
        listed = subprocess.run(
            [ss, "-H", "-ltnp", f"sport = :{port}"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"pid=(\d+)", listed)
    return int(found.group(1)) if found else None
