"""jobpost beside Restate (issue 40, item 3): `python -m bench restate` runs `bench.system`'s
loads against the same promise written on Restate (`bench.restate_service`: one virtual
object per posting gives the versions, one per posting per board delivers them through
jobpost's own adapters to the same sandbox), with the same load tools, and prints the same
table: cores at rest, updates/s, latency, CPU per accepted update of every process of that
system (restate-server, the service, the sandbox) from the load's start until it is quiet
again, what the boards saw twice or out of order, memory.

It needs what jobpost does not: `restate-server` (`npm install
@restatedev/restate-server@1.7.12`; RESTATE_SERVER names the binary when it is not on the
PATH) and a Python with `restate-sdk` 1.3 and `hypercorn` besides jobpost's requirements
(RESTATE_PYTHON; default this one). Run it and `python -m bench system` in turn, in both
orders, and compare ratios (bench/README.md)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench import write_path
from bench.idle import at_rest, cores_table
from bench.system import Pids, rss_mib
from bench.whole_system import SECONDS, at_boards, measure, print_spending, until_quiet
from jobpost_dev.processes import Process, answers, free_port, wait_until

REPO = Path(__file__).resolve().parents[1]


@dataclass
class RestateSystem:
    """The Restate build of the promise, as `bench.write_path.Target` and `at_boards` take it."""

    url: str  # the ingress
    sandbox: str
    processes: dict[str, subprocess.Popen[bytes]]
    sandbox_process: Process
    headers: dict[str, str] = field(default_factory=dict)  # Restate's ingress asks for none here
    update_route = ("POST", "/Posting/", "/put")

    def pids(self) -> Pids:
        found = {name: _tree(process.pid) for name, process in self.processes.items()}
        found["sandbox"] = _tree(self.sandbox_process.popen.pid)
        return found


def _tree(pid: int) -> list[int]:
    """The process and its descendants (hypercorn serves from a child of its own)."""
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                parents[int(proc.name)] = int((proc / "stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError):
                continue
    found, grown = [pid], True
    while grown:
        more = [child for child, parent in parents.items() if parent in found and child not in found]
        found += more
        grown = bool(more)
    return found


def _server() -> str:
    found = os.environ.get("RESTATE_SERVER") or shutil.which("restate-server")
    if not found:
        sys.exit("restate-server: npm install @restatedev/restate-server@1.7.12; RESTATE_SERVER: the binary")
    return found


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


@contextmanager
def running_restate() -> Iterator[RestateSystem]:
    """The sandbox, a restate-server with a folder of its own and the service registered with it."""
    sandbox_port, ingress, admin, fabric, service = (free_port() for _ in range(5))
    sandbox = f"http://127.0.0.1:{sandbox_port}"
    sandbox_process = Process("bench-restate-sandbox", ["sandbox", "--port", str(sandbox_port)], {})
    processes: dict[str, subprocess.Popen[bytes]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-restate-") as folder:
        try:
            processes["restate-server"] = _start(
                [_server(), "--base-dir", f"{folder}/data", "--no-logo", "--listen-mode", "tcp"],
                Path(folder, "server.log"),
                {
                    "RESTATE_BIND_IP": "127.0.0.1",
                    "RESTATE_BIND_PORT": str(fabric),
                    "RESTATE_INGRESS__BIND_PORT": str(ingress),
                    "RESTATE_ADMIN__BIND_PORT": str(admin),
                },
            )
            python = os.environ.get("RESTATE_PYTHON", sys.executable)
            processes["service"] = _start(
                [python, "-m", "hypercorn", "--bind", f"127.0.0.1:{service}", "bench.restate_service:app"],
                Path(folder, "service.log"),
                {"JOBPOST_BENCH_SANDBOX": sandbox, "PYTHONPATH": f"{REPO}:{REPO / 'dev'}"},
            )
            wait_until(lambda: answers(f"{sandbox}/docs"), 30, "sandbox")
            wait_until(lambda: answers(f"http://127.0.0.1:{admin}/health"), 60, "restate-server")
            register = {"uri": f"http://127.0.0.1:{service}"}
            wait_until(
                lambda: httpx.post(f"http://127.0.0.1:{admin}/deployments", json=register).is_success,
                60,
                "the service registered",
            )
            yield RestateSystem(f"http://127.0.0.1:{ingress}", sandbox, processes, sandbox_process)
        finally:
            for process in processes.values():
                _stop(process)
            sandbox_process.stop()


def create_postings(system: RestateSystem, n: int) -> list[str]:
    """n postings, each by its first update (version 1 at both boards)."""

    async def run() -> list[str]:
        async with httpx.AsyncClient(timeout=30) as http:
            sem = asyncio.Semaphore(32)

            async def one() -> str:
                posting_id = f"restate-{uuid.uuid4().hex}"
                async with sem:
                    response = await http.post(f"{system.url}/Posting/{posting_id}/put", json=write_path.BODY)
                    response.raise_for_status()
                return posting_id

            return await asyncio.gather(*(one() for _ in range(n)))

    return asyncio.run(run())


def main(seconds: float = SECONDS) -> None:
    s = seconds
    with running_restate() as system:
        postings = create_postings(system, 1000)
        pids = system.pids()
        idle = at_rest(pids)
        until_quiet(pids, idle)
        loads = [
            ("32 clients, 1,000 postings (saturation)", lambda: write_path.saturate(system, postings, 32, s)),
            ("100 updates/s, 1,000 postings", lambda: write_path.fixed_rate(system, postings, 100, s)),
            ("32 clients, one posting", lambda: write_path.saturate(system, postings[:1], 32, s)),
        ]
        phases = [measure(pids, name, idle, seconds, run) for name, run in loads]
        boards = at_boards(system, postings)  # type: ignore[arg-type]
        memory = rss_mib(pids)
    print(
        f"Restate (restate-server, the service, the sandbox), {seconds:.0f} s per load; CPU per update: "
        "every process of it from the load's start until it is quiet again, less its rate at rest "
        f"({100 * sum(idle.values()):.0f} % of a core)"
    )
    print(cores_table(idle))
    print("| load | updates/s | p50 ms | p99 ms | p99.9 ms | errors | client | CPU ms per update | quiet |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for phase in phases:
        print(f"{phase.load.row(phase.name)} {phase.cpu_ms_per_update():.1f} | {phase.drained_s:.1f} s |")
    print_spending(phases, len(postings), boards, memory)
