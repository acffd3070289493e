"""A component that keeps failing is reported on the console with the last error line of
its log, not left to crash-loop with the reason only in `.stack/logs/`."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jobpost_dev import supervisor
from jobpost_dev.supervisor import Component, Supervisor

FAILS_AT_ONCE = (
    "import sys; print('starting', flush=True);"
    " print('error: port 8000 is taken', file=sys.stderr, flush=True); print('bye'); sys.exit(3)"
)


def watched(component: Component, log_dir: Path, until: Callable[[set[int]], bool]) -> None:
    """Supervise `component` until `until(pids of its exited starts)`, then stop it."""
    run = Supervisor([component], log_dir, dict(os.environ))
    run.start(component)
    exited: set[int] = set()
    deadline = time.monotonic() + 20
    try:
        while not until(exited):
            assert time.monotonic() < deadline, f"{len(exited)} exits after 20 s"
            run.watch_once()
            if component.process is not None and component.process.poll() is not None:
                exited.add(component.process.pid)
            time.sleep(0.01)
    finally:
        run.stop_all(timeout=5)


def test_the_third_failed_start_in_a_row_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    flaky = Component("api", [sys.executable, "-c", FAILS_AT_ONCE], backoff=0.01)

    watched(flaky, tmp_path, until=lambda _exited: flaky.failures == 4)

    said = capsys.readouterr().out.splitlines()
    log = tmp_path / "api.log"
    assert said == [
        "api exited with 3; restarting in 0 s",
        "api exited with 3; restarting in 0 s",
        f"api keeps failing (exit 3, 3 times; restarting in 0 s; log {log}): error: port 8000 is taken",
        f"api keeps failing (exit 3, 4 times; restarting in 0 s; log {log}): error: port 8000 is taken",
    ]


def test_a_component_that_ran_long_enough_starts_counting_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(supervisor, "HEALTHY_AFTER_S", 0.05)
    monkeypatch.setattr(supervisor, "FIRST_BACKOFF_S", 0.01)
    script = "import sys, time; time.sleep(0.15); print('error: lost kafka', flush=True); sys.exit(1)"
    steady = Component("indexer", [sys.executable, "-c", script], backoff=0.01)

    watched(steady, tmp_path, until=lambda exited: len(exited) == 3 and steady.restart_at is not None)

    assert steady.failures == 1
    assert capsys.readouterr().out.splitlines() == ["indexer exited with 1; restarting in 0 s"] * 3


def test_every_exit_is_recorded_with_its_status_or_signal_and_last_error(tmp_path: Path) -> None:
    script = (
        "import os, signal; print('error: the sequencer is stuck', flush=True);"
        " os.kill(os.getpid(), signal.SIGKILL)"
    )
    crashing = Component("api-2", [sys.executable, "-c", script], backoff=0.01)
    quitting = Component("indexer", [sys.executable, "-c", FAILS_AT_ONCE], backoff=0.01)

    for component in (crashing, quitting):
        watched(component, tmp_path, until=lambda exited, c=component: c.failures == 1)

    records = [json.loads(line) for line in (tmp_path / "exits.jsonl").read_text().splitlines()]
    assert [(r["component"], r["status"], r["last_error"]) for r in records] == [
        ("api-2", "killed by SIGKILL", "error: the sequencer is stuck"),
        ("indexer", "exit status 3", "error: port 8000 is taken"),
    ]
    assert all(r["pid"] > 0 and r["at"] > 0 for r in records)
