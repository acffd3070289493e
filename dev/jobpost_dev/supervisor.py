"""`make run`'s supervisor: each component a child process in a session of its own, its
output in its log, restarted when it exits, stopped in order.

A component that exits is restarted with backoff (1 s doubling to 30 s, reset after a
minute of healthy running); from its third failed start in a row the console says so, with
the last error line of its log. stop_all() stops the components in reverse order, SIGTERM
then, after STOP_WITHIN_S, SIGKILL. Each component runs in a session of its own (a Ctrl-C at
the terminal reaches the supervisor alone, which stops them in order); on Linux it is also
sent SIGTERM when the supervisor dies however it dies, kill -9 included, so none is left
holding its port.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jobpost_dev.log_tail import last_error_line
from jobpost_dev.ports import Port

STOP_WITHIN_S = 20.0  # each component's time to stop on SIGTERM before it is killed
FIRST_BACKOFF_S = 1.0  # before the first restart; doubled for each next, up to 30 s
HEALTHY_AFTER_S = 60.0  # running this long, a component's backoff and failures start again
SAID_AFTER_FAILURES = 3  # failed starts in a row before the console says why


@dataclass
class Component:
    name: str
    argv: list[str]
    address: str = ""
    env: dict[str, str] = field(default_factory=dict)
    metrics: str = ""  # host:port of its /metrics, for Prometheus
    listens: Port | None = None  # the port it serves on, checked free before the run starts
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff: float = FIRST_BACKOFF_S
    restart_at: float | None = None
    failures: int = 0  # failed starts in a row
    log_from: int = 0  # where this start's lines begin in its log


class Supervisor:
    def __init__(self, components: list[Component], log_dir: Path, env: dict[str, str]) -> None:
        self.components = components
        self.log_dir = log_dir
        self.env = env
        self.stopping = False

    def start(self, component: Component) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        with self.log_of(component).open("ab") as log:
            component.log_from = log.tell()
            component.process = subprocess.Popen(
                component.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**self.env, **component.env},
                start_new_session=True,
                preexec_fn=_ended_with(os.getpid()),
            )
        component.started_at = time.monotonic()
        component.restart_at = None

    def log_of(self, component: Component) -> Path:
        return self.log_dir / f"{component.name}.log"

    def watch_once(self) -> None:
        now = time.monotonic()
        for c in self.components:
            if c.process is None or self.stopping:
                continue
            if c.process.poll() is None:
                if now - c.started_at > HEALTHY_AFTER_S:
                    c.backoff, c.failures = FIRST_BACKOFF_S, 0
                continue
            if c.restart_at is None:
                c.restart_at = now + c.backoff
                c.failures += 1
                print(self.exited(c), flush=True)
                c.backoff = min(c.backoff * 2, 30.0)
            elif now >= c.restart_at:
                self.start(c)

    def exited(self, c: Component) -> str:
        """What the console says of a component that exited; from its third failed start in
        a row, with the last error line of its log."""
        assert c.process is not None
        restarting = f"restarting in {c.backoff:.0f} s"
        if c.failures < SAID_AFTER_FAILURES:
            return f"{c.name} exited with {c.process.returncode}; {restarting}"
        last = last_error_line(self.log_of(c), since=c.log_from)
        return (
            f"{c.name} keeps failing (exit {c.process.returncode}, {c.failures} times; {restarting};"
            f" log {self.log_of(c)}): {last}"
        )

    def stop_all(self, timeout: float = STOP_WITHIN_S) -> None:
        self.stopping = True
        for c in reversed(self.components):
            if c.process and c.process.poll() is None:
                c.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for c in reversed(self.components):
            if c.process is None:
                continue
            try:
                c.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(c.process.pid, signal.SIGKILL)
                c.process.wait()


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _ended_with(supervisor: int) -> Callable[[], None] | None:
    """For a child, between fork and exec: SIGTERM when the supervisor's thread ends (Linux's
    parent-death signal); one whose supervisor was gone by then ends at once. Elsewhere None
    (no such signal): there a supervisor killed -9 leaves its components running. Found
    after CI runs: a test's harness killed a `jobpost run` still stopping its API, and
    the sandbox it had started lived on with no parent."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, before the fork

    def in_child() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != supervisor:
            os.kill(os.getpid(), signal.SIGTERM)

    return in_child
