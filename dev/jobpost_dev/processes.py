"""Real component processes, started as `jobpost <command>` is, for the tests and the
benchmarks: an API process ready to serve, a child with its own log, polling with a
deadline."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import httpx

from jobpost_dev.project import project_root
from jobpost_dev.supervisor import STOP_WITHIN_S
from runtime.kafka import KafkaSettings
from runtime.stores import StateSettings


def log_dir() -> Path:
    """Where each child's log goes: the project's `.stack/logs/processes/`."""
    return project_root() / ".stack" / "logs" / "processes"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(n: int) -> int:
    """The first of n consecutive ports that are free now: a base that a command counts
    up from (the API's replicas, `JOBPOST_METRICS_PORT_BASE`)."""
    while True:
        first = free_port()
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + n):
                    held.enter_context(socket.create_server(("127.0.0.1", port)))
            except OSError:
                continue
        return first


def kafka_env(kafka: KafkaSettings) -> dict[str, str]:
    """Every Kafka setting a child needs to reach the same Kafka and topics (security included)."""
    return kafka.environment()


def component_pids(command: str, topic_prefix: str) -> list[int]:
    """Pids of the processes running `jobpost <command>` for the system with this topic
    prefix (several systems may share a machine)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            environ = (proc / "environ").read_bytes()
        except (OSError, ValueError):
            continue
        if (
            f"jobpost.cli {command}" in cmdline
            and f"JOBPOST_KAFKA_TOPIC_PREFIX={topic_prefix}\0".encode() in environ
        ):
            found.append(int(proc.name))
    return found


def answers(url: str) -> bool:
    """True once a GET of `url` answers 200 (a server that is up, e.g. a sandbox's /docs)."""
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll `condition` until it returns something truthy; fail with `what` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


class Process:
    """One `jobpost <command>` child with its own log file."""

    def __init__(self, name: str, command: list[str], env: dict[str, str]) -> None:
        logs = log_dir()
        logs.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = logs / f"{name}-{os.getpid()}-{time.time_ns()}.log"
        # Local stores: a folder of its own under the caller's state folder, unless given one
        # (a restart that should find its state again is given the same folder).
        state = StateSettings()
        root = state.dir if "dir" in state.model_fields_set else Path(tempfile.gettempdir())
        self.state_dir = Path(env.get("JOBPOST_STATE_DIR") or root / f"{name}-{time.time_ns()}")
        with self.log_path.open("wb") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "jobpost.cli", *command],
                env={**os.environ, **env, "JOBPOST_STATE_DIR": str(self.state_dir)},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        """kill -9: no goodbye, as a crash would be."""
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(10)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                # Longer than `jobpost run` gives its components, so a run is not killed
                # while it still stops them.
                self.popen.wait(STOP_WITHIN_S + 10)
            except subprocess.TimeoutExpired:
                self.kill()


class ApiProcess(Process):
    def __init__(self, kafka: KafkaSettings, token: str, elasticsearch_url: str, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        super().__init__(
            f"api-{self.port}",
            ["api"],
            {
                **kafka_env(kafka),
                "JOBPOST_API_PORT": str(self.port),
                "JOBPOST_API_TOKENS": token,
                "JOBPOST_API_ELASTICSEARCH_URL": elasticsearch_url,
                **env,
            },
        )

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def wait_ready(self, timeout: float = 60.0, needs: tuple[str, ...] = ("kafka", "sequencer")) -> None:
        def ready() -> bool:
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited:\n{self.log_tail()}")
            try:
                checks = httpx.get(f"{self.url}/readyz", timeout=2).json()["checks"]
            except (httpx.HTTPError, ValueError, KeyError):
                return False
            return all(checks.get(n) for n in needs)

        wait_until(ready, timeout, f"{self.name} to be ready")


A = TypeVar("A", bound=ApiProcess)


@contextlib.contextmanager
def running(process: A) -> Iterator[A]:
    """An API process (with its sequencer member), ready to serve, stopped afterwards."""
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


def running_api(
    kafka: KafkaSettings, token: str, elasticsearch_url: str, **env: str
) -> contextlib.AbstractContextManager[ApiProcess]:
    return running(ApiProcess(kafka, token, elasticsearch_url, **env))
