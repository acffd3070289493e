"""`make chaos` / `jobpost chaos`: three brokers, two replicas of every component, the
sandbox failing 5 % of calls and losing 5 % of answers, a steady write load, and faults
one after another. Then convergence is awaited and checked from outside (see verify)."""

from __future__ import annotations

import asyncio
import itertools
import shutil
import statistics
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from jobpost import stack
from jobpost.chaos import verify
from jobpost.chaos.faults import FAULTS, Target
from jobpost.chaos.load import Ledger, Load
from jobpost.processes import Process, free_port, wait_until
from runtime.kafka import KafkaSettings
from schemas.topics import BOARDS

FULL = ["broker-kill", "broker-pause", "api-kill", "consumer-kill", "indexer-kill", "search-stop"]
SHORT = ["broker-kill", "consumer-kill", "api-kill"]


@dataclass
class Plan:
    duration_s: float = 300.0
    rate: float = 50.0
    postings: int = 500
    faults: list[str] = field(default_factory=lambda: list(FULL))
    outage_s: float = 20.0
    converge_timeout_s: float = 180.0
    stack_dir: str | None = None  # None: the project's .stack; a folder of its own for the short run
    remove_stack_dir: bool = False  # the short run's cluster leaves nothing behind
    kafka_port: int = 9092
    elasticsearch_url: str | None = None  # None: the stack's


@dataclass
class FaultWindow:
    name: str
    started: float
    ended: float
    what: str = ""


@dataclass
class Report:
    ledger: Ledger
    verdict: verify.Verdict
    windows: list[FaultWindow]
    converged_after_s: float | None
    load_ended: float = float("inf")

    def lines(self) -> list[str]:
        ok = [s for s in self.ledger.samples if s.ok]
        during = [s.latency_s for s in ok if self._in_fault(s.started)]
        calm = [s.latency_s for s in ok if not self._in_fault(s.started)]
        gap, cause = self.longest_outage()
        v = self.verdict
        return [
            f"writes attempted {self.ledger.attempted}, acknowledged {len(self.ledger.acked)}, "
            f"gave up {len(self.ledger.gave_up)}, refused {self.ledger.refused}",
            f"lost {len(v.lost)}, duplicated {len(v.duplicated)}, reordered {len(v.reordered)}, "
            f"accepted but never acknowledged {len(v.unacknowledged)}",
            "boards not as accepted: "
            + ", ".join(f"{board} {len(v.boards.get(board, []))}" for board in BOARDS)
            + f"; index not at the last version: {len(v.index)}",
            f"dead letters: {v.dead_letters}",
            f"longest stretch without a successful write: {gap:.1f} s ({cause})",
            f"write latency during faults: {_percentiles(during)}; without: {_percentiles(calm)}",
            "converged "
            + (
                f"{self.converged_after_s:.1f} s after the last fault"
                if self.converged_after_s is not None
                else "NOT within the timeout"
            ),
            *(
                f"  fault {w.name}: {w.what} ({w.ended - w.started:.1f} s); no write acknowledged for "
                f"{self.longest_gap(w.started, min(w.ended + 30, self.load_ended)):.1f} s at most, "
                "until 30 s after it (or the end of the load)"
                for w in self.windows
            ),
        ]

    @property
    def kept_every_promise(self) -> bool:
        v = self.verdict
        return not (v.lost or v.duplicated or v.reordered) and self.converged_after_s is not None

    def _in_fault(self, at: float) -> bool:
        return any(w.started <= at <= w.ended + 5 for w in self.windows)

    def longest_gap(self, start: float, end: float) -> float:
        """The longest time in [start, end] in which no write was acknowledged."""
        done = sorted(
            s.started + s.latency_s
            for s in self.ledger.samples
            if s.ok and start <= s.started + s.latency_s <= end
        )
        edges = [start, *done, end]
        return max(b - a for a, b in itertools.pairwise(edges))

    def longest_outage(self) -> tuple[float, str]:
        done = sorted(s.started + s.latency_s for s in self.ledger.samples if s.ok)
        if len(done) < 2:
            return 0.0, "no writes"
        gap, end = max((b - a, b) for a, b in itertools.pairwise(done))
        cause = next((w.name for w in self.windows if w.started - 1 <= end - gap <= w.ended + 5), "no fault")
        return gap, cause


def short_plan() -> Plan:
    """The run of `make test`: about two minutes, one broker kill and restart, one consumer
    of each board and one API replica killed; a cluster of its own on ports 19092-19097."""
    import tempfile

    return Plan(
        duration_s=100.0,
        rate=20.0,
        postings=100,
        faults=list(SHORT),
        outage_s=15.0,
        converge_timeout_s=120.0,
        stack_dir=tempfile.mkdtemp(prefix="jobpost-chaos-"),
        remove_stack_dir=True,
        kafka_port=19092,
    )


def _percentiles(samples: list[float]) -> str:
    if len(samples) < 2:
        return "too few samples"
    q = statistics.quantiles([s * 1000 for s in samples], n=100, method="inclusive")
    return f"p50 {q[49]:.0f} ms, p99 {q[98]:.0f} ms ({len(samples)} writes)"


def run(plan: Plan) -> Report:
    settings = stack.StackSettings(brokers=3, kafka_port=plan.kafka_port)
    if plan.stack_dir:
        own = Path(plan.stack_dir)
        own.mkdir(parents=True, exist_ok=True)
        if not (own / "jars").exists():  # the project's jars, fetched once
            (own / "jars").symlink_to(settings.dir.resolve() / "jars")
        settings = settings.model_copy(update={"dir": own})
    cluster = stack.kafka_for(settings)
    started_cluster = cluster.start()
    search = stack.ElasticsearchServer(settings)
    started_search = plan.elasticsearch_url is None and search.start()
    es_url = plan.elasticsearch_url or settings.elasticsearch_url
    prefix = f"chaos{uuid.uuid4().hex[:8]}"
    kafka = KafkaSettings(
        bootstrap_servers=settings.kafka_bootstrap,
        topic_prefix=prefix,
        replication_factor=3,
        min_insync_replicas=2,
    )
    token = uuid.uuid4().hex
    api_port, sandbox_port = free_port(), free_port()
    while api_port + 1 == sandbox_port:
        sandbox_port = free_port()
    system = Process(
        "chaos-run", ["run"], _environment(kafka, settings, token, api_port, sandbox_port, es_url)
    )
    apis = [f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{api_port + 1}"]
    sandbox = f"http://127.0.0.1:{sandbox_port}"
    try:
        wait_until(lambda: all(_ready(api, system) for api in apis), 180, "both API replicas", interval=0.5)
        for board in BOARDS:
            faults = {
                "mode": "error",
                "probability": 0.05,
                "also": [{"mode": "lose_response", "probability": 0.05}],
            }
            httpx.put(f"{sandbox}/_sandbox/{board}/faults", json=faults).raise_for_status()
        target = Target(settings, settings.kafka_bootstrap, f"{prefix}.postings", prefix, plan.outage_s)
        load = Load(apis, token, rate=plan.rate, postings=plan.postings)
        windows = _drive(plan, load, target)
        load_ended = time.monotonic()
        last_fault_ended = max(w.ended for w in windows) if windows else time.monotonic()
        verdict = verify.check_log(load.ledger, log := verify.log_of(kafka))
        converged_after = _converge(
            verdict, log, sandbox, es_url, f"{prefix}-postings", plan, last_fault_ended
        )
        verdict.dead_letters = verify.count_dead_letters(kafka)
        return Report(load.ledger, verdict, windows, converged_after, load_ended)
    finally:
        system.stop()
        if started_cluster:
            cluster.stop()
        if started_search:
            search.stop()
        if plan.stack_dir and plan.remove_stack_dir:
            shutil.rmtree(plan.stack_dir, ignore_errors=True)


def _drive(plan: Plan, load: Load, target: Target) -> list[FaultWindow]:
    """Run the load for the plan's duration, with the faults spread evenly over it."""
    thread = threading.Thread(target=asyncio.run, args=(load.run(),), name="load")
    began = time.monotonic()
    thread.start()
    windows: list[FaultWindow] = []
    try:
        step = plan.duration_s / (len(plan.faults) + 1)
        for n, name in enumerate(plan.faults, start=1):
            time.sleep(max(0.0, began + n * step - time.monotonic()))
            window = FaultWindow(name, time.monotonic(), 0.0)
            try:
                window.what = FAULTS[name](target)
            except Exception as exc:  # noqa: BLE001 - a fault that could not be put right is reported, not fatal
                window.what = f"FAILED: {exc}".splitlines()[0]
            window.ended = time.monotonic()
            windows.append(window)
            print(f"fault {name}: {window.what}", flush=True)
        time.sleep(max(0.0, began + plan.duration_s - time.monotonic()))
    finally:
        load.stop()
        thread.join(120)
    return windows


def _converge(
    verdict: verify.Verdict, log: dict, sandbox: str, es: str, alias: str, plan: Plan, since: float
) -> float | None:
    deadline = time.monotonic() + plan.converge_timeout_s
    while True:
        verify.check_outside(verdict, log, sandbox, es, alias)
        if verdict.converged:
            return time.monotonic() - since
        if time.monotonic() > deadline:
            return None
        time.sleep(2)


def _ready(api: str, system: Process) -> bool:
    assert system.popen.poll() is None, system.log_tail()
    try:
        return httpx.get(f"{api}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _environment(
    kafka: KafkaSettings, settings: stack.StackSettings, token: str, api_port: int, sandbox_port: int, es: str
) -> dict[str, str]:
    alias = f"{kafka.topic_prefix}-postings"
    return {
        "JOBPOST_RUN_SERVERS": "false",
        "JOBPOST_RUN_REPLICAS": "2",
        "JOBPOST_STACK_BROKERS": "3",
        "JOBPOST_STACK_DIR": str(settings.dir),
        "JOBPOST_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "JOBPOST_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "JOBPOST_KAFKA_REPLICATION_FACTOR": "3",
        "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": "2",
        "JOBPOST_API_TOKENS": token,
        "JOBPOST_API_PORT": str(api_port),
        "JOBPOST_SANDBOX_PORT": str(sandbox_port),
        "JOBPOST_METRICS_PORT_BASE": str(free_port()),
        "JOBPOST_API_ELASTICSEARCH_URL": es,
        "JOBPOST_INDEXER_ELASTICSEARCH_URL": es,
        "JOBPOST_API_SEARCH_ALIAS": alias,
        "JOBPOST_INDEXER_ALIAS": alias,
        # Board retries at a test's pace (the production policy waits up to 60 s between tries).
        "JOBPOST_CONSUMER_RETRY__FIRST_WAIT_S": "0.5",
        "JOBPOST_CONSUMER_RETRY__MAX_WAIT_S": "5",
    }
