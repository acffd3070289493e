"""A component of `jobpost run` does not outlive its supervisor, even one killed -9 (a test
harness out of patience, an OOM kill): Linux's parent-death signal ends it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux parent-death signal")

SUPERVISE = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from jobpost_dev.supervisor import Component, Supervisor
    child = Component("sleeper", [sys.executable, "-c", "import time; time.sleep(120)"])
    supervisor = Supervisor([child], Path(sys.argv[1]), dict(os.environ))
    supervisor.start(child)
    print(child.process.pid, flush=True)
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for whoever adopted it to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_component_ends_when_its_supervisor_is_killed(tmp_path: Path) -> None:
    supervisor = subprocess.Popen(
        [sys.executable, "-c", SUPERVISE, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert supervisor.stdout is not None
    child = int(supervisor.stdout.readline())
    try:
        assert _alive(child)
        time.sleep(0.2)  # a while after its start: it does not end on its own
        assert _alive(child), "the component should run while its supervisor does"

        supervisor.kill()
        supervisor.wait(10)

        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the component outlived its supervisor"
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
