"""What every local server shares: its folders, pid file, start, stop and readiness wait."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jobpost_dev.ports import Port
from jobpost_dev.stack import pidfile
from jobpost_dev.stack.pidfile import ProcessIdentity
from jobpost_dev.stack.settings import POMS, StackError, StackSettings, mvn

Progress = Callable[[str], None]
"""Told what a long step (a download, an unpack) is doing; the command line prints it."""


def quiet(_message: str) -> None:
    """The default Progress: the library itself prints nothing."""


class Managed(Protocol):
    """What `jobpost stack` and `jobpost run` manage: one server, or Kafka's three nodes."""

    name: str

    def fetch(self, progress: Progress = quiet) -> None: ...
    def fetched_into(self) -> Path: ...
    def running(self) -> bool: ...
    def start(self, progress: Progress = quiet) -> bool: ...
    def stop(self, timeout: float = 60.0) -> bool: ...
    def stop_launched(self) -> bool: ...
    def members(self) -> list[Server]: ...


@dataclass
class Server:
    """One local server: how to fetch it, start it, and tell that it answers."""

    name: str
    settings: StackSettings

    @property
    def home(self) -> Path:
        return self.settings.dir / self.name

    @property
    def pid_file(self) -> Path:
        return self.settings.dir / "run" / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.settings.dir / "logs" / f"{self.name}.log"

    def pid(self) -> int | None:
        """The pid of the server this stack started, while that very process lives."""
        identity = self._identity()
        return None if identity is None else identity.pid

    def _identity(self) -> ProcessIdentity | None:
        identity = pidfile.read(self.pid_file)
        return identity if identity is not None and identity.alive() else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self, progress: Progress = quiet) -> bool:
        """Start the server unless it runs already; True when this call started it."""
        if self.running():
            return False
        self.check_free()
        self.fetch(progress)
        self.prepare()
        proc = self.launch()
        try:
            wait_until(
                self.answers,
                timeout=self.settings.start_timeout_s,
                what=f"{self.name} to answer",
                alive=lambda: proc.poll() is None,
                log=self.log_file,
            )
        except BaseException:
            # Ctrl-C, SIGTERM or a failure while waiting: leave no server behind.
            self.abandon(proc)
            raise
        return True

    def check_free(self) -> None:
        if self.occupied():
            raise StackError(f"{self.name}: something else already listens on its port")

    def occupied(self) -> bool:
        """Whether something not started by this stack holds the server's port(s)."""
        return self.answers()

    def launch(self) -> subprocess.Popen[bytes]:
        """Run the prepared server in its own process group and record it; no waiting."""
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: stop() kills the JVM children too
                env=self.environment(),
                cwd=self.home,
                **self.popen_user(),
            )
        try:
            self._record(proc)
        except BaseException:
            self.abandon(proc)
            raise
        return proc

    def abandon(self, proc: subprocess.Popen[bytes]) -> None:
        """Stop a process launch() started and forget it."""
        end_groups([proc.pid], timeout=30.0)
        self.pid_file.unlink(missing_ok=True)

    def _record(self, proc: subprocess.Popen[bytes]) -> None:
        identity = ProcessIdentity.of(proc.pid)
        if identity is None:
            raise StackError(f"{self.name} exited at once; see {self.log_file}")
        pidfile.write(self.pid_file, identity)

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the server started by start(); True when one was running."""
        identity = self._identity()
        if identity is None:
            # Missing, stale (its pid may belong to another process now) or unreadable:
            # nothing of ours to signal.
            self.pid_file.unlink(missing_ok=True)
            return False
        end_groups([identity.pid], timeout)
        self.pid_file.unlink(missing_ok=True)
        return True

    def stop_launched(self) -> bool:
        """Stop what start() launched (for one server: the server)."""
        return self.stop()

    def kill(self) -> bool:
        """SIGKILL the server at once (no shutdown), as a crash would; True when one ran."""
        identity = self._identity()
        if identity is None:
            return False
        signal_group(identity.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and group_alive(identity.pid):
            time.sleep(0.05)
        self.pid_file.unlink(missing_ok=True)
        return True

    def members(self) -> list[Server]:
        """The processes behind this server, each with its own pid (here: itself)."""
        return [self]

    # Hooks for the two servers.
    def fetch(self, progress: Progress = quiet) -> None:
        """Download and unpack what the server runs from, unless that is done already."""
        raise NotImplementedError

    def fetched_into(self) -> Path:
        raise NotImplementedError

    def addresses(self) -> list[str]:
        """Where clients reach it."""
        raise NotImplementedError

    def ports(self) -> list[Port]:
        """Every port it listens on, each with the setting that moves it."""
        raise NotImplementedError

    def prepare(self) -> None:
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def popen_user(self) -> dict[str, Any]:
        return {}

    def answers(self) -> bool:
        raise NotImplementedError


def fetch_archive(
    name: str, what: str, version: str, size_mb: int, archive: Path, progress: Progress
) -> None:
    """Download one archive from Maven Central into its folder (`poms/<name>/pom.xml`
    names it, `-D<name>.version` its version), unless it is there already."""
    if archive.exists():
        return
    progress(f"{name}: fetching {what} {version} from Maven Central (~{size_mb} MB) ...")
    mvn(
        POMS / name / "pom.xml",
        "dependency:copy-dependencies",
        f"-D{name}.version={version}",
        f"-DoutputDirectory={archive.parent}",
    )
    progress(f"{name}: {archive.name}, {megabytes(archive):.0f} MB in {archive.parent}")


def megabytes(path: Path) -> float:
    """The size of a file, or of a folder's files (symlinks not followed), in MiB."""
    if not path.is_dir():
        return path.stat().st_size / 2**20
    total = 0
    for folder, _dirs, files in os.walk(path):
        total += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
    return total / 2**20


def end_groups(pids: list[int], timeout: float) -> None:
    """SIGTERM the process groups led by `pids`, all at once; SIGKILL what is left after
    `timeout` or on an interruption (a second Ctrl-C) while waiting."""
    for pid in pids:
        signal_group(pid, signal.SIGTERM)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(group_alive(pid) for pid in pids):
            time.sleep(0.2)
    finally:
        for pid in pids:
            if group_alive(pid):
                signal_group(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and any(group_alive(pid) for pid in pids):
            time.sleep(0.05)


def signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def group_alive(pid: int) -> bool:
    # Reap the leader if this process started it: a zombie leader keeps the group alive.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(
    condition: Callable[[], bool],
    *,
    timeout: float,
    what: str,
    alive: Callable[[], bool],
    log: Path,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if not alive():
            tail = log.read_text(errors="replace")[-3000:]
            raise StackError(f"gave up waiting for {what}: the process exited. Log tail:\n{tail}")
        time.sleep(0.5)
    raise StackError(f"gave up waiting for {what} after {timeout:.0f} s; see {log}")
