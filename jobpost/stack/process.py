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
from typing import Any

from jobpost.stack.settings import StackError, StackSettings


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
        try:
            pid = int(self.pid_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, owned by the unprivileged user we started it as
        return pid

    def running(self) -> bool:
        return self.pid() is not None

    def start(self) -> bool:
        """Start the server unless it runs already; True when this call started it."""
        if self.running():
            return False
        if self.answers():
            raise StackError(f"{self.name}: something else already listens on its port")
        self.fetch()
        self.prepare()
        self.pid_file.parent.mkdir(parents=True, exist_ok=True)
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
        self.pid_file.write_text(str(proc.pid))
        wait_until(
            self.answers,
            timeout=self.settings.start_timeout_s,
            what=f"{self.name} to answer",
            alive=lambda: proc.poll() is None,
            log=self.log_file,
        )
        return True

    def stop(self, timeout: float = 60.0) -> bool:
        """Stop the server started by start(); True when one was running."""
        pid = self.pid()
        if pid is None:
            self.pid_file.unlink(missing_ok=True)
            return False
        signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and group_alive(pid):
            time.sleep(0.2)
        if group_alive(pid):
            signal_group(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
        return True

    # Hooks for the two servers.
    def fetch(self) -> None:
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
