"""State that scales: restarts, takeovers, memory and disk with N postings in the log.

`python -m bench scale [--postings N]` (default 1,000,000) seeds N postings straight to the
log (bench/seed.py), then measures, one run each: an API replica's first start with no
local state and its restart with its state on disk; a sequencer failover (kill -9 of the
member owning partition 0 of commands); a LinkedIn consumer's start and restart with N
delivery states; the API's RSS and local state on disk; write throughput and latency at N
against a system of 1,000 postings. Prints a table and writes bench/results/scale-<date>.json.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from bench.common import delete_prefix, local_kafka, percentiles
from bench.probes import (
    DEADLINE_S,
    Stopwatch,
    alive,
    disk_mib,
    ready_and_written,
    rss_mib,
    start_api,
    until_written,
)
from bench.seed import Seeded, seed
from bench.write_path import closed_loop, open_loop
from jobpost_dev.processes import ApiProcess, Process, answers, free_port, kafka_env, wait_until
from runtime.kafka import KafkaSettings

RESULTS = Path(__file__).with_name("results")
LOAD_SECONDS = 20.0


@dataclass(frozen=True)
class Figure:
    measure: str
    value: float | None  # None: not reached within the deadline
    unit: str
    target: str = "—"
    note: str = ""

    def shown(self) -> str:
        if self.value is None:
            return f"not within {DEADLINE_S:.0f} s"
        amount = f"{self.value:,.0f}" if self.value >= 100 else f"{self.value:.1f}"
        return f"{amount} {self.unit}" + (f" ({self.note})" if self.note else "")


def api_restarts(kafka: KafkaSettings, seeded: Seeded, state_dir: Path, figures: list[Figure]) -> ApiProcess:
    """First start with no local state, then a restart with it; returns the replica, running."""
    posting_id = random.choice(seeded.posting_ids)
    clock = Stopwatch()
    api = start_api(kafka, state_dir)
    try:
        ready, written = asyncio.run(ready_and_written(api, posting_id, clock))
        figures.extend(
            [
                Figure("API first start, no local state, no live replica: write accepted", written, "s"),
                Figure("API first start, no local state, no live replica: /readyz 200", ready, "s"),
                Figure("API RSS after its first start (ready)", rss_mib(api), "MiB", "≤ 512 MiB"),
            ]
        )
    finally:
        api.stop()
    clock = Stopwatch()
    api = start_api(kafka, state_dir)
    ready, written = asyncio.run(ready_and_written(api, posting_id, clock))
    figures.extend(
        [
            Figure("API restart, state on disk: /readyz 200", ready, "s"),
            Figure("API restart, state on disk: write accepted", written, "s", "≤ 10 s"),
            Figure("API RSS after its restart (ready)", rss_mib(api), "MiB", "≤ 512 MiB"),
        ]
    )
    return api


def write_load(api: ApiProcess, posting_ids: list[str], label: str) -> list[Figure]:
    n, latencies = asyncio.run(closed_loop(api, posting_ids, 32, LOAD_SECONDS))
    paced = sorted(asyncio.run(open_loop(api, posting_ids, 100, LOAD_SECONDS)))
    p99_ms = paced[int(0.99 * (len(paced) - 1))] * 1000
    return [
        Figure(f"writes, 32 clients, {label}", n / LOAD_SECONDS, "updates/s", note=percentiles(latencies)),
        Figure(f"p99 at 100 updates/s offered, {label}", p99_ms, "ms", "≤ 50 ms", percentiles(paced)),
    ]


def board_consumer(kafka: KafkaSettings, api: ApiProcess, seeded: Seeded, state_dir: Path) -> list[Figure]:
    """A LinkedIn consumer whose group committed the end of postings: from its start until
    the update made right after it arrives at the sandbox, first with no local state, then
    again after a clean stop."""
    port = free_port()
    sandbox = Process("scale-sandbox", ["sandbox", "--port", str(port)], {})
    sandbox_url = f"http://127.0.0.1:{port}"
    env = {
        **kafka_env(kafka),
        "JOBPOST_STATE_DIR": str(state_dir),
        "JOBPOST_CONSUMER_LINKEDIN__BASE_URL": f"{sandbox_url}/linkedin",
    }
    try:
        wait_until(lambda: answers(f"{sandbox_url}/docs"), 30, "the sandbox")
        cold, cold_accepted = _start_and_deliver(env, api, sandbox_url, random.choice(seeded.posting_ids))
        warm, warm_accepted = _start_and_deliver(env, api, sandbox_url, random.choice(seeded.posting_ids))
    finally:
        sandbox.stop()
    return [
        Figure("LinkedIn consumer first start, no local state: next delivery", cold, "s", note=cold_accepted),
        Figure("LinkedIn consumer restart: next delivery", warm, "s", "≤ 10 s", warm_accepted),
    ]


def _start_and_deliver(
    env: dict[str, str], api: ApiProcess, sandbox_url: str, posting_id: str
) -> tuple[float | None, str]:
    """Start the consumer, update the posting through the API: seconds from the start until
    the board applied the update, and when the API accepted it."""
    started = time.time()
    consumer = Process("scale-linkedin", ["consumer", "linkedin"], env)
    try:
        accepted, version = asyncio.run(until_written(api, posting_id, Stopwatch()))
        note = f"update accepted after {accepted or 0:.1f} s"
        seen = f"{sandbox_url}/_sandbox/linkedin/postings/{posting_id}"
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            alive(consumer)
            board = httpx.get(seen).json()
            if version in board.get("versions", []):
                applied_ms = board["applied_at_ms"][board["versions"].index(version)]
                return applied_ms / 1000 - started, note
            time.sleep(0.1)
        return None, note
    finally:
        consumer.stop()


def failover(
    kafka: KafkaSettings, first: ApiProcess, seeded: Seeded, state_dir: Path
) -> tuple[list[Figure], float]:
    """A second replica joins with no local state, copying the first one's stores
    (runtime.snapshots) before it reads the rest from Kafka: until /readyz is 200 and a
    write through it is accepted. Then kill -9 the replica whose sequencer member owns
    partition 0 of commands; time until the survivor accepts a write to a posting of
    partition 0. Returns the figures and the second replica's local state on disk (MiB)."""
    clock = Stopwatch()
    second = start_api(kafka, state_dir, JOBPOST_API_SNAPSHOT_PEERS=first.url)
    try:
        cold, joined = asyncio.run(ready_and_written(second, random.choice(seeded.posting_ids), clock))
        copied = "a live one's stores copied"
        joining = [
            Figure(f"new API replica, no local state, {copied}: /readyz 200", cold, "s", "≤ 60 s"),
            Figure(f"new API replica, no local state, {copied}: write accepted", joined, "s"),
            Figure("new API replica's RSS once ready", rss_mib(second), "MiB", "≤ 512 MiB"),
        ]
        wait_until(lambda: _ready(first) and _ready(second), DEADLINE_S, "both replicas to be ready")
        on_zero = seeded.on_partition(0)
        # Right after a join the group may still be moving partition 0: ask until one answer.
        owner = wait_until(lambda: _owner(first, second, random.choice(on_zero)), 60, "partition 0's owner")
        survivor = second if owner is first else first
        owner.kill()
        clock = Stopwatch()
        written, _ = asyncio.run(until_written(survivor, random.choice(on_zero), clock))
        return [
            *joining,
            Figure(
                "sequencer failover (kill -9 of partition 0's owner): write accepted", written, "s", "≤ 15 s"
            ),
        ], disk_mib(state_dir)
    finally:
        second.stop()


def _owner(first: ApiProcess, second: ApiProcess, posting_id: str) -> ApiProcess | None:
    """The replica whose sequencer member sequences this posting's commands: the one whose
    own command counter moves when it is written (nothing else writes to these topics)."""
    before = (_sequenced(first), _sequenced(second))
    for _ in range(3):
        asyncio.run(until_written(first, posting_id, Stopwatch()))
    moved = (_sequenced(first) - before[0], _sequenced(second) - before[1])
    if (moved[0] > 0) == (moved[1] > 0):
        return None  # both (or neither) sequenced: the partition moved meanwhile
    return first if moved[0] > 0 else second


def _sequenced(api: ApiProcess) -> float:
    text = httpx.get(f"{api.url}/metrics", timeout=5).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("jobpost_sequencer_commands_total")
    )


def _ready(api: ApiProcess) -> bool:
    alive(api)
    try:
        return httpx.get(f"{api.url}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def at_scale(n: int, workdir: Path, figures: list[Figure]) -> None:
    kafka = local_kafka()
    try:
        seeded = seed(kafka, n)
        figures.append(Figure(f"seed: {n:,} postings with their states", seeded.seconds, "s"))
        api_dir, consumer_dir, second_dir = workdir / "api-1", workdir / "linkedin", workdir / "api-2"
        api = api_restarts(kafka, seeded, api_dir, figures)
        try:
            figures.extend(write_load(api, seeded.posting_ids, f"{n:,} postings"))
            figures.extend(board_consumer(kafka, api, seeded, consumer_dir))
            failed_over, second_disk = failover(kafka, api, seeded, second_dir)
            figures.extend(failed_over)
        finally:
            api.stop()
        figures.extend(
            [
                Figure("local state on disk: API replica", disk_mib(api_dir), "MiB"),
                Figure("local state on disk: second API replica", second_disk, "MiB"),
                Figure("local state on disk: LinkedIn consumer", disk_mib(consumer_dir), "MiB"),
            ]
        )
    finally:
        delete_prefix(kafka)


def at_thousand(workdir: Path, figures: list[Figure]) -> None:
    kafka = local_kafka()
    try:
        seeded = seed(kafka, 1000, progress=lambda _: None)
        api = start_api(kafka, workdir / "api-small")
        try:
            api.wait_ready(timeout=120)
            figures.extend(write_load(api, seeded.posting_ids, "1,000 postings"))
        finally:
            api.stop()
    finally:
        delete_prefix(kafka)


def report(n: int, figures: list[Figure]) -> Path:
    width = max(len(f.measure) for f in figures)
    print(f"| {'measure':<{width}} | at {n:,} postings | target |")
    for f in figures:
        print(f"| {f.measure:<{width}} | {f.shown()} | {f.target} |")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"scale-{time.strftime('%Y-%m-%d')}.json"
    body = {
        "postings": n,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "figures": [asdict(f) for f in figures],
    }
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    return path


def main(postings: int = 1_000_000) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="jobpost-scale-"))
    figures: list[Figure] = []
    try:
        at_scale(postings, workdir, figures)
        at_thousand(workdir, figures)
    finally:  # what was measured before a failure is still worth seeing
        shutil.rmtree(workdir, ignore_errors=True)
        print(f"figures written to {report(postings, figures)}")
