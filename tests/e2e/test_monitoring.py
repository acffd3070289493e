"""`make run` with Prometheus: a real Prometheus (Debian's) scrapes the system as `jobpost
run` starts it, two replicas of everything; after a short load with the faults the panels
exist for (a rejection, a retry, a poison record, a corrupt local store), every target is up,
the rules are loaded, and every query of the Grafana dashboard is valid and returns data."""

import os
import re
import signal
import time
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from jobpost_dev.processes import free_port, log_dir
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from schemas.topics import Topics
from tests.dashboard import dashboard_queries, metric_names
from tests.e2e.conftest import System, started_system
from tests.e2e.test_journey import progress
from tests.processes import wait_until

pytestmark = pytest.mark.serial  # eleven processes and a Prometheus, with waits of a minute and more

# What Grafana puts in for $__rate_interval with a 5 s scrape interval is ~20 s; a minute
# keeps two samples in every window of this short run.
RATE_INTERVAL = "1m"


def exposed(prometheus: str, logs: Path) -> set[str]:
    """Every metric family some target of Prometheus exposes (its # HELP lines)."""
    targets = httpx.get(f"{prometheus}/api/v1/targets").json()["data"]["activeTargets"]
    names: set[str] = set()
    for target in targets:
        log = logs / f"{target['labels']['component']}.log"

        def metrics() -> str | None:
            try:
                return httpx.get(target["scrapeUrl"], timeout=10).text
            except httpx.HTTPError:
                return None

        text = wait_until(metrics, 30, f"{target['scrapeUrl']} to answer (its log: {log})")
        names |= set(re.findall(r"^# HELP (\S+)", text, re.MULTILINE))
    return names


def _epoch(rfc3339: str) -> float:
    """Prometheus's timestamps carry nanoseconds, which datetime does not take."""
    match = re.fullmatch(r"([^.]+?)(\.\d+)?(Z|[+-]\d\d:\d\d)", rfc3339)
    assert match, rfc3339
    whole, fraction, zone = match.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    return moment.timestamp() + float(fraction or 0)


def load(system: System, topics: Topics, bootstrap: str) -> None:
    """Writes, a delete, a LinkedIn rejection (a dead letter), an Indeed retry, a record no
    reader can use."""
    api = system.client
    ids = []
    for n in range(5):
        ids.append(api.create(title=f"Monitoring Engineer {n}")["id"])
        for version in (1, 2):
            api.replace(ids[-1], title=f"v{version}")
    api.delete(ids[0])
    for board in ("linkedin", "indeed"):
        wait_until(lambda: all(system.board(board, i)["versions"] for i in ids), 60, f"{board} to take them")

    sandbox = httpx.Client(base_url=system.sandbox)
    assert sandbox.put("/_sandbox/linkedin/faults", json={"mode": "reject"}).status_code == 200
    assert sandbox.put("/_sandbox/indeed/faults", json={"mode": "error"}).status_code == 200
    refused = api.create(title="Refused by LinkedIn")["id"]
    wait_until(lambda: progress(api, refused)["linkedin"]["status"] == "failed", 60, "LinkedIn's dead letter")
    wait_until(lambda: progress(api, refused)["indeed"]["status"] == "retrying", 60, "Indeed retrying")
    assert sandbox.put("/_sandbox/linkedin/faults", json={"mode": "none"}).status_code == 200
    assert sandbox.put("/_sandbox/indeed/faults", json={"mode": "none"}).status_code == 200
    wait_until(lambda: system.board("indeed", refused)["versions"] == [0], 60, "Indeed after its retry")

    producer = KafkaClients(KafkaSettings(bootstrap_servers=bootstrap)).producer()
    producer.produce(topics.postings, b"not an avro record", b"poison-1")
    assert producer.flush(10) == 0


def board_wide(system: System) -> None:
    """The board as a whole: Indeed unreachable (its circuit opens, the lane is paused), and
    LinkedIn throttling (a 429 pauses its destination). After the consumers' restart, so the
    counters they leave are the ones Prometheus goes on scraping."""
    api, sandbox = system.client, httpx.Client(base_url=system.sandbox)
    assert sandbox.put("/_sandbox/indeed/faults", json={"mode": "outage"}).status_code == 200
    assert sandbox.put("/_sandbox/linkedin/faults", json={"mode": "rate_limit"}).status_code == 200
    held = api.create(title="Held by the outage")["id"]
    wait_until(lambda: progress(api, held)["indeed"]["status"] == "paused", 90, "Indeed's circuit to open")
    assert sandbox.put("/_sandbox/indeed/faults", json={"mode": "none"}).status_code == 200
    assert sandbox.put("/_sandbox/linkedin/faults", json={"mode": "none"}).status_code == 200
    for board in ("linkedin", "indeed"):
        wait_until(lambda: system.board(board, held)["versions"] == [0], 90, f"{board} after the outage")


def state_dir_of(pid: int) -> Path:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return Path(next(v for v in environ if v.startswith(b"JOBPOST_STATE_DIR=")).split(b"=", 1)[1].decode())


def corrupt_and_kill(system: System, command: str) -> None:
    """Consumers found with their local stores unreadable: killed, every RocksDB store
    either of them had replaced by one whose CURRENT file is garbage (in both folders, so
    whichever partitions they get back, they find it); the supervisor restarts them and
    they rebuild the stores from Kafka."""
    pids = system.children(command)
    folders = [state_dir_of(pid) for pid in pids]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not set(pids) & set(system.children(command)), 10, f"{command} {pids} to die")
    stores = {current.parent.relative_to(folder) for folder in folders for current in folder.rglob("CURRENT")}
    assert stores, f"no RocksDB store under {folders}"
    for folder in folders:
        for store in stores:
            (folder / store).mkdir(parents=True, exist_ok=True)
            (folder / store / "CURRENT").write_bytes(b"garbage")
    wait_until(lambda: len(system.children(command)) == len(pids), 30, f"{command} restarted")


def test_prometheus_scrapes_every_replica_and_every_dashboard_query_returns_data(
    kafka, elasticsearch_url, unique
):
    # A Prometheus of its own (no series of an earlier run answer for this one), and the
    # components' logs beside the test's own.
    stack_dir = log_dir() / f"monitoring-{unique}"
    port = free_port()
    prometheus = f"http://127.0.0.1:{port}"
    settings = {
        "JOBPOST_RUN_PROMETHEUS": "true",
        "JOBPOST_RUN_PROMETHEUS_PORT": str(port),
        "JOBPOST_RUN_REPLICAS": "2",
        "JOBPOST_STACK_DIR": str(stack_dir),
    }
    with started_system(kafka, elasticsearch_url, unique, **settings) as system:
        load(system, Topics(kafka.topic_prefix), kafka.bootstrap_servers)
        corrupt_and_kill(system, "consumer indeed")
        board_wide(system)

        def targets() -> list[dict]:
            return httpx.get(f"{prometheus}/api/v1/targets").json()["data"]["activeTargets"]

        # Every target answers (the restarted consumers too), then Prometheus has seen each up
        # after that (a scrape from before the kill would say "up" as well).
        available = exposed(prometheus, stack_dir / "logs")
        answered = time.time()

        def all_up_since() -> bool:
            found = targets()
            return len(found) == 10 and all(
                t["health"] == "up" and _epoch(t["lastScrape"]) > answered for t in found
            )

        wait_until(all_up_since, 60, "every target up in a scrape after they all answered")
        jobs = sorted((t["labels"]["job"], t["labels"]["component"]) for t in targets())
        assert jobs == sorted(
            (f"jobpost-{kind}", f"{kind}-{r}")
            for kind in ("api", "linkedin", "indeed", "indexer", "webhooks")
            for r in (1, 2)
        )
        groups = httpx.get(f"{prometheus}/api/v1/rules").json()["data"]["groups"]
        assert {g["name"]: len(g["rules"]) for g in groups} == {"jobpost-recording": 6, "jobpost-alerts": 11}

        unknown = {name for _, expr in dashboard_queries() for name in metric_names(expr)} - available
        assert unknown == set(), f"the dashboard reads series no component exposes: {unknown}"

        def answer(expr: str) -> dict:
            query = expr.replace("$__rate_interval", RATE_INTERVAL)
            return httpx.get(f"{prometheus}/api/v1/query", params={"query": query}, timeout=10).json()

        for title, expr in dashboard_queries():
            assert answer(expr)["status"] == "success", f"{title}: {expr}: {answer(expr)}"
            wait_until(lambda: answer(expr)["data"]["result"], 90, f"data for {title!r}: {expr}", interval=1)
