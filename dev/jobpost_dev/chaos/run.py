"""`make chaos` / `jobpost chaos`: three brokers, two replicas of every component, the
sandbox failing 5 % of calls and losing 5 % of answers, a steady write load, and faults
one after another. Then convergence is awaited and checked from outside (see verify)."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from jobpost_dev import stack
from jobpost_dev.chaos import verify
from jobpost_dev.chaos.coordinators import java_describes
from jobpost_dev.chaos.exits import Watch
from jobpost_dev.chaos.faults import FAULTS, Target, roles
from jobpost_dev.chaos.load import Load
from jobpost_dev.chaos.report import FaultWindow, Report, sequencer_counters
from jobpost_dev.processes import Process, free_port, free_ports, wait_until
from runtime.kafka import KafkaSettings
from schemas.topics import BOARDS, Component, Topics

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


def run(plan: Plan) -> Report:
    settings = stack.StackSettings(brokers=3, kafka_port=plan.kafka_port)
    if plan.stack_dir:
        own = Path(plan.stack_dir)
        own.mkdir(parents=True, exist_ok=True)
        if not (own / "jars").exists():  # the project's jars, fetched once
            (own / "jars").symlink_to(settings.dir.resolve() / "jars")
        settings = settings.model_copy(update={"dir": own})
    since = time.time()
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
    api_port = free_ports(2)  # replica r listens on api_port + r - 1
    sandbox_port = free_port()
    while sandbox_port in (api_port, api_port + 1):
        sandbox_port = free_port()
    system = Process(
        "chaos-run", ["run"], _environment(kafka, settings, token, api_port, sandbox_port, es_url)
    )
    apis = [f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{api_port + 1}"]
    sandbox = f"http://127.0.0.1:{sandbox_port}"
    clean = False  # a run that ended early, or saw a process exit by itself, keeps its logs
    try:
        wait_until(lambda: all(_ready(api, system) for api in apis), 180, "both API replicas", interval=0.5)
        for board in BOARDS:
            faults = {
                "mode": "error",
                "probability": 0.05,
                "also": [{"mode": "lose_response", "probability": 0.05}],
            }
            httpx.put(f"{sandbox}/_sandbox/{board}/faults", json=faults).raise_for_status()
        group = Topics(prefix).group(Component.SEQUENCER)
        # make run names each replica's member after it (api-1, api-2): its transactional id
        members = {f"api-{n}": f"{group}-api-{n}" for n in (1, 2)}
        target = Target(
            settings, settings.kafka_bootstrap, f"{prefix}.postings", prefix, plan.outage_s, members, group
        )
        _say_coordinators(target, settings)
        watch = Watch(settings, since)
        load = Load(apis, token, rate=plan.rate, postings=plan.postings)
        windows = _drive(plan, load, target, watch)
        load_ended = time.monotonic()
        last_fault_ended = max(w.ended for w in windows) if windows else time.monotonic()
        verdict = verify.check_log(load.ledger, log := verify.log_of(kafka))
        converged_after = _converge(
            verdict, log, sandbox, es_url, f"{prefix}-postings", plan, last_fault_ended
        )
        verdict.dead_letters = verify.count_dead_letters(kafka)
        counters = {api: sequencer_counters(api) for api in apis}
        partitions = {posting_id: versions[0].partition for posting_id, versions in log.items()}
        exits = watch.exits(target.victims)
        report = Report(
            load.ledger,
            verdict,
            windows,
            converged_after,
            load_ended,
            counters,
            partitions,
            target.victims,
            exits,
        )
        clean = not report.unexpected_exits
        return report
    finally:
        system.stop()
        if started_cluster:
            cluster.stop()
        if started_search:
            search.stop()
        if plan.stack_dir and plan.remove_stack_dir:
            _remove(Path(plan.stack_dir), keep_logs=not clean)


def _remove(folder: Path, keep_logs: bool) -> None:
    """The run's own folder, or all of it but its components' logs (`logs/`: what a crash
    printed, beyond the last line the report gives), which it names."""
    if not keep_logs:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for child in folder.iterdir():
        if child.name == "logs":
            continue
        if child.is_symlink() or not child.is_dir():
            child.unlink(missing_ok=True)
        else:
            shutil.rmtree(child, ignore_errors=True)
    print(f"the run's logs are kept in {folder / 'logs'}")


def _say_coordinators(target: Target, settings: stack.StackSettings) -> None:
    """Print what each broker does for the sequencer, and check once with Kafka's own tool
    that the transaction coordinator worked out here is the broker's."""
    for found in roles(target).values():
        print(f"broker {found.node_id}: {found.said()}", flush=True)
    for name, transactional_id in target.members.items():
        said = java_describes(settings.dir / "jars" / "kafka", target.bootstrap, transactional_id)
        ours = next((r.node_id for r in roles(target).values() if name in r.transactions_of), None)
        agreed = "agrees" if said == ours else f"says {said}"
        print(
            f"transaction coordinator of {name}: broker {ours} (Kafka's TransactionsCommand {agreed})",
            flush=True,
        )


def _drive(plan: Plan, load: Load, target: Target, watch: Watch) -> list[FaultWindow]:
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
            watch.look()  # a broker or the search server started again: its new pid
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
        "JOBPOST_RUN_PROMETHEUS": "false",  # measured without it; 9090 may be a developer's
        "JOBPOST_STACK_BROKERS": "3",
        "JOBPOST_STACK_DIR": str(settings.dir),
        "JOBPOST_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "JOBPOST_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "JOBPOST_KAFKA_REPLICATION_FACTOR": "3",
        "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": "2",
        "JOBPOST_API_TOKENS": token,
        "JOBPOST_API_PORT": str(api_port),
        "JOBPOST_SANDBOX_PORT": str(sandbox_port),
        # Each of the two replicas' LinkedIn, Indeed and indexer consumers and dispatcher.
        "JOBPOST_METRICS_PORT_BASE": str(free_ports(8)),
        "JOBPOST_API_ELASTICSEARCH_URL": es,
        "JOBPOST_INDEXER_ELASTICSEARCH_URL": es,
        "JOBPOST_API_SEARCH_ALIAS": alias,
        "JOBPOST_INDEXER_ALIAS": alias,
        # Board retries at a test's pace (the production policy waits up to 60 s between tries).
        "JOBPOST_CONSUMER_RETRY__FIRST_WAIT_S": "0.5",
        "JOBPOST_CONSUMER_RETRY__MAX_WAIT_S": "5",
        # Every version at the boards, so a version missing there is a loss, not a conflation.
        "JOBPOST_CONSUMER_DELIVER_EVERY_VERSION": "true",
    }
