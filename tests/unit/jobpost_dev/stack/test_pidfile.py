"""A pid file names one process: a stale pid now used by another process is not ours."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from jobpost_dev import stack
from jobpost_dev.stack import pidfile
from jobpost_dev.stack.pidfile import ProcessIdentity
from jobpost_dev.stack.process import Progress, Server, quiet


@pytest.fixture
def kafka(tmp_path: Path) -> stack.KafkaServer:
    return stack.KafkaServer(stack.StackSettings(dir=tmp_path))


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: sent.append((pid, sig)))
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    return sent


def test_a_live_process_that_is_not_ours_is_not_running_and_never_signalled(
    kafka: stack.KafkaServer, signals: list[tuple[int, int]]
) -> None:
    pidfile.write(kafka.pid_file, ProcessIdentity(os.getpid(), "another-boot:12345"))

    assert kafka.pid() is None
    assert not kafka.running()
    assert kafka.stop() is False
    assert signals == []
    assert not kafka.pid_file.exists()


def test_the_process_the_file_names_is_running(kafka: stack.KafkaServer) -> None:
    identity = ProcessIdentity.of(os.getpid())
    assert identity is not None
    pidfile.write(kafka.pid_file, identity)

    assert kafka.pid() == os.getpid()


# "our pid": the old style, a bare pid (of this process, which is alive); the test's name is
# the same in every process that collects it (pytest-xdist's workers must agree on them).
@pytest.mark.parametrize("content", ["our pid", "", "{not json", '{"pid": "x"}'])
def test_an_old_style_or_damaged_pid_file_is_not_trusted(kafka: stack.KafkaServer, content: str) -> None:
    kafka.pid_file.parent.mkdir(parents=True)
    kafka.pid_file.write_text(str(os.getpid()) if content == "our pid" else content)

    assert kafka.pid() is None


def test_no_identity_for_a_process_that_does_not_exist() -> None:
    assert ProcessIdentity.of(-1) is None
    assert ProcessIdentity.of(2**31 - 1) is None


class _Sleeper(Server):
    """A 'server' that never answers; answers() is interrupted like Ctrl-C would."""

    launched: int | None = None

    def fetch(self, progress: Progress = quiet) -> None:
        pass

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    def command(self) -> list[str]:
        return [sys.executable, "-c", "import time; time.sleep(60)"]

    def answers(self) -> bool:
        identity = pidfile.read(self.pid_file)
        if identity is None:
            return False  # the check before launching
        self.launched = identity.pid
        raise KeyboardInterrupt


def test_ctrl_c_while_waiting_stops_the_process_just_launched(tmp_path: Path) -> None:
    server = _Sleeper("sleeper", stack.StackSettings(dir=tmp_path))

    with pytest.raises(KeyboardInterrupt):
        server.start()

    assert server.launched is not None
    with pytest.raises(ProcessLookupError):
        os.kill(server.launched, 0)
    assert not server.pid_file.exists()
