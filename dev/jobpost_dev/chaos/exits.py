"""Every process that exited during a fault run, and why: the components `jobpost run`
restarted (its supervisor writes each exit to `exits.jsonl`: status or signal, and the last
error line of the component's log), and the brokers and the search server that are no
longer the processes they were. Each is put down to the fault that ended it, or to none:
the goal is no exit but the ones the run caused."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from jobpost_dev import stack
from jobpost_dev.chaos.faults import Victim
from jobpost_dev.log_tail import last_error_line


@dataclass(frozen=True)
class Exit:
    name: str
    pid: int
    status: str  # "exit status 70", "killed by SIGKILL", "no longer running"
    last_error: str
    fault: str | None  # the fault that ended it; None: not the run's doing

    def said(self) -> str:
        cause = f"the run's {self.fault}" if self.fault else "NOT the run's doing"
        error = f": {self.last_error}" if self.last_error and not self.fault else ""
        return f"{self.name} (pid {self.pid}) {self.status}{error} — {cause}"


class Watch:
    """The processes of a run outside `jobpost run`'s supervision (the brokers, the search
    server), by pid, from the start on; with the supervisor's record, what exited."""

    def __init__(self, settings: stack.StackSettings, since: float) -> None:
        self.settings = settings
        self.since = since  # time.time() when the run began
        self.known: dict[int, tuple[str, Path]] = {}  # pid -> (name, log)
        self.look()

    def look(self) -> None:
        """Note the servers' pids now (after a fault restarted one, its new pid)."""
        for node in stack.kafka_nodes(self.settings):
            pid = node.pid()
            if pid is not None:
                self.known.setdefault(pid, (f"kafka-{node.node_id}", node.log_file))
        search = stack.ElasticsearchServer(self.settings)
        pid = search.pid()
        if pid is not None:
            self.known.setdefault(pid, ("elasticsearch", search.log_file))

    def exits(self, victims: list[Victim]) -> list[Exit]:
        by_pid = {v.pid: v for v in victims}
        found = [
            Exit(r["component"], r["pid"], r["status"], r["last_error"], _fault(by_pid, r["pid"]))
            for r in _records(self.settings.dir / "logs" / "exits.jsonl", self.since)
        ]
        for pid, (name, log) in self.known.items():
            if not _alive(pid):
                status = (
                    "killed by SIGKILL"
                    if pid in by_pid and "kill" in by_pid[pid].fault
                    else "no longer running"
                )
                found.append(Exit(name, pid, status, last_error_line(log), _fault(by_pid, pid)))
        return found


def _fault(victims: dict[int, Victim], pid: int) -> str | None:
    victim = victims.get(pid)
    return None if victim is None else victim.fault


def _records(path: Path, since: float) -> list[dict]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    records = [json.loads(line) for line in lines if line.strip()]
    return [r for r in records if r["at"] >= since]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie of ours is not alive: reap it if it is our child.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)
    return done == 0


def _state(pid: int) -> str:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "zombie"
    return next((line for line in status.splitlines() if line.startswith("State:")), "").lower()
