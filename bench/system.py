"""The whole system as `make run` starts it (`jobpost run`: the sandbox, the API with its
sequencer, both board consumers, the indexer) on the local servers, with topics, an alias
and ports of its own; and the CPU each of its processes (and Kafka's and Elasticsearch's)
spent, read from /proc."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.common import delete_prefix, local_kafka
from jobpost_dev import stack
from jobpost_dev.processes import Process, component_pids, free_port, free_ports, kafka_env, wait_until
from runtime.kafka import KafkaSettings

TOKEN = "bench"
# The component processes by their `jobpost` command; the servers by their main class.
COMPONENTS = {
    "api": "api",
    "linkedin": "consumer linkedin",
    "indeed": "consumer indeed",
    "indexer": "indexer",
    "webhooks": "webhooks",
    "sandbox": "sandbox",
}
WORKERS = ("linkedin", "indeed", "indexer")  # in the order of their metrics ports (supervisor)
SERVERS = {"kafka": "kafka.Kafka", "elasticsearch": "org.elasticsearch.bootstrap.Elasticsearch"}
_TICK = os.sysconf("SC_CLK_TCK")
Pids = dict[str, list[int]]  # the system's processes by component (System.pids reads all of /proc)


@dataclass
class System:
    kafka: KafkaSettings
    api: str
    sandbox: str
    metrics: dict[str, str]  # linkedin, indeed, indexer -> their /metrics
    elasticsearch: str
    alias: str
    process: Process

    @property
    def url(self) -> str:  # the API's, as `bench.write_path.Target` names it
        return self.api

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKEN}"}

    def pids(self) -> Pids:
        found = {
            name: component_pids(command, self.kafka.topic_prefix) for name, command in COMPONENTS.items()
        }
        found.update({name: java_pids(main) for name, main in SERVERS.items()})
        prometheus = prometheus_pids(self.kafka.topic_prefix)
        if prometheus:  # make run starts it when it is installed
            found["prometheus"] = prometheus
        return found


def cpu_seconds(pids: Pids) -> dict[str, float]:
    """User + system CPU each process has used so far (all its threads)."""
    return {name: sum(cpu_of(pid) for pid in numbers) for name, numbers in pids.items()}


def rss_mib(pids: Pids) -> dict[str, float]:
    """Resident memory of each process (all its pids), MiB."""
    found: dict[str, float] = {}
    for name, numbers in pids.items():
        kib = 0
        for pid in numbers:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            resident = re.search(r"VmRSS:\s+(\d+)", status)  # absent for a process exiting
            kib += int(resident.group(1)) if resident else 0
        found[name] = kib / 1024
    return found


def cpu_of(pid: int, stat: str = "") -> float:
    try:
        fields = Path(stat or f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def tasks_cpu(pid: int) -> Iterator[tuple[int, str, float]]:
    """Each thread of the process: (its id, its OS name, the CPU seconds it has used)."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return
    for task in tasks:
        try:
            comm = (task / "comm").read_text().strip()
        except OSError:
            continue
        yield int(task.name), comm, cpu_of(int(task.name), f"{task}/stat")


def thread_cpu(pid: int, prefix: str) -> dict[str, float]:
    """CPU seconds of each thread of a Python process, by what the thread is: its Python
    name (py-spy tells it), else its OS name (librdkafka's `rdk:*`, RocksDB's ...), threads
    of one kind summed; a view's name without the run's topic prefix."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    dump = subprocess.run(
        [py_spy, "dump", "--pid", str(pid), "--json", "--nonblocking"],
        capture_output=True,
        text=True,
        check=True,
    )
    named = {t["os_thread_id"]: t["thread_name"] for t in json.loads(dump.stdout) if t.get("thread_name")}
    spent: dict[str, float] = defaultdict(float)
    for tid, comm, cpu in tasks_cpu(pid):
        name = named.get(tid) or re.sub(r"[:#/].*$|\d+$", "", comm) or comm
        spent[name.replace(f"{prefix}.", "")] += cpu
    return dict(spent)


def prometheus_pids(topic_prefix: str) -> list[int]:
    """The Prometheus `jobpost run` started for the system with this topic prefix."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or (proc / "comm").read_text().strip() != "prometheus":
                continue
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if f"JOBPOST_KAFKA_TOPIC_PREFIX={topic_prefix}\0".encode() in environ:
            found.append(int(proc.name))
    return found


def java_pids(main_class: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            arguments = (proc / "cmdline").read_bytes().split(b"\0") if proc.name.isdigit() else []
        except OSError:
            continue
        # `kafka.Kafka`, or `-m org.elasticsearch.server/org.elasticsearch.bootstrap.Elasticsearch`
        if any(a.decode(errors="replace").rpartition("/")[2] == main_class for a in arguments):
            found.append(int(proc.name))
    return found


@contextmanager
def running_system() -> Iterator[System]:
    """Started, ready (/readyz 200), and afterwards stopped with its topics and index gone."""
    kafka = local_kafka()
    elasticsearch = os.environ.get("ELASTICSEARCH_URL") or stack.StackSettings().elasticsearch_url
    api_port, sandbox_port, metrics_base = free_port(), free_port(), _metrics_ports()
    alias = f"{kafka.topic_prefix}-postings"
    env = {
        **kafka_env(kafka),
        "JOBPOST_API_PORT": str(api_port),
        "JOBPOST_SANDBOX_PORT": str(sandbox_port),
        "JOBPOST_API_TOKENS": TOKEN,
        "JOBPOST_API_ELASTICSEARCH_URL": elasticsearch,
        "JOBPOST_INDEXER_ELASTICSEARCH_URL": elasticsearch,
        "JOBPOST_API_SEARCH_ALIAS": alias,
        "JOBPOST_INDEXER_ALIAS": alias,
        "JOBPOST_RUN_SERVERS": "false",  # the local servers, started by local_kafka
        "JOBPOST_METRICS_PORT_BASE": str(metrics_base),
        # The components' logs in this project's .stack/logs, wherever the servers live.
        "JOBPOST_STACK_DIR": str(Path(__file__).resolve().parents[1] / ".stack"),
    }
    with tempfile.TemporaryDirectory(prefix="bench-state-") as state:
        process = Process("bench-run", ["run"], {**env, "JOBPOST_STATE_DIR": state})
        system = System(
            kafka,
            f"http://127.0.0.1:{api_port}",
            f"http://127.0.0.1:{sandbox_port}",
            {name: f"http://127.0.0.1:{metrics_base + n}/metrics" for n, name in enumerate(WORKERS)},
            elasticsearch,
            alias,
            process,
        )
        try:
            wait_until(lambda: _ready(system), 120, "the whole system to be ready")
            yield system
        finally:
            process.stop()
            delete_prefix(kafka)
            httpx.delete(f"{elasticsearch}/{alias}-*", params={"allow_no_indices": "true"})
            httpx.delete(f"{elasticsearch}/_index_template/{alias}")


def _ready(system: System) -> bool:
    assert system.process.popen.poll() is None, system.process.log_tail()
    try:
        return httpx.get(f"{system.api}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _metrics_ports() -> int:
    """A base port with the three after it free too (`JOBPOST_METRICS_PORT_BASE` + 0, 1, 2:
    LinkedIn, Indeed, the indexer; + 3: the webhooks dispatcher)."""
    return free_ports(4)
