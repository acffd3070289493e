"""Write path: accepted updates per second and latency through the real HTTP API.

One table: 32 clients over 1,000 postings as fast as they go (saturation; wrk when
installed), open loops at fixed offered rates of 50, 100 and 200 updates/s, 32 clients on
one posting, and Kafka's own ProducerPerformance (acks=all, same record size) on the same
broker in the same run, with the ratio of the saturation figure to it. Then where a write's
time goes at 100 updates/s, from the API's `jobpost_write_stage_seconds` histograms.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import io
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import httpx

from bench import stages
from bench.common import delete_prefix, local_kafka
from jobpost_dev import stack
from jobpost_dev.processes import ApiProcess
from runtime.kafka import KafkaSettings
from schemas import codec
from schemas.model import Op, PostingUpdate
from tests import postings

TOKEN = "bench"
BODY = postings.body(0)
RATES = (50, 100, 200)
# A board tells a job's versions apart by their content (neither reads jobpost's version or
# an Idempotency-Key): the same body sent twice is, at the board, the same job applied again,
# which the sandbox counts as a repeat. So each request of a load carries a description of
# its own: `revision(run, n)`, or this mark replaced by the load tool.
_MARK = "@REVISION@"


def revision(run: str, n: int) -> dict[str, object]:
    """`BODY` as the `n`th request of the load `run` sends it: its description names both."""
    return {**BODY, "description": f"{BODY['description']} (Revision {run}.{n}.)"}


def _marked() -> str:
    """`BODY` as JSON whose description ends with `_MARK`, for a load tool to replace."""
    return json.dumps(revision(_MARK, 0)).replace(f"{_MARK}.0", _MARK)


class Target(Protocol):
    """Where the loads go: the API alone (`ApiProcess`) or the whole system (`bench.system`)."""

    @property
    def url(self) -> str: ...

    @property
    def headers(self) -> dict[str, str]: ...


UPDATE_ROUTE = ("PUT", "/postings/", "")  # jobpost's: PUT /postings/{id}


def route(api: Target) -> tuple[str, str, str]:
    """How the target takes an update of a posting: method, and the path before and after
    the posting's id (jobpost's API, or what the target names: `bench.restate`'s ingress)."""
    found: tuple[str, str, str] = getattr(api, "update_route", UPDATE_ROUTE)
    return found


@dataclass
class Load:
    """What one load phase measured."""

    rate: float  # accepted updates/s
    p50_ms: float
    p99_ms: float
    p999_ms: float
    errors: int
    client: str

    def row(self, name: str) -> str:
        return (
            f"| {name} | {self.rate:,.0f} | {self.p50_ms:.1f} | {self.p99_ms:.1f} | {self.p999_ms:.1f} "
            f"| {self.errors} | {self.client} |"
        )


def _quantile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(q * len(sorted_ms)))] if sorted_ms else float("nan")


def _load(latencies_s: list[float], seconds: float, errors: int, client: str) -> Load:
    ms = sorted(s * 1000 for s in latencies_s)
    return Load(
        len(ms) / seconds, _quantile(ms, 0.50), _quantile(ms, 0.99), _quantile(ms, 0.999), errors, client
    )


async def closed_loop(
    api: Target, posting_ids: list[str], clients: int, seconds: float
) -> tuple[int, list[float]]:
    latencies: list[float] = []
    deadline = time.monotonic() + seconds
    run, sent = uuid.uuid4().hex[:8], itertools.count()
    method, before, after = route(api)

    async def client() -> None:
        async with httpx.AsyncClient(timeout=30, headers=api.headers) as http:
            while time.monotonic() < deadline:
                posting_id = random.choice(posting_ids)
                started = time.perf_counter()
                url = f"{api.url}{before}{posting_id}{after}"
                response = await http.request(method, url, json=revision(run, next(sent)))
                response.raise_for_status()
                latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(client() for _ in range(clients)))
    return len(latencies), latencies


async def open_loop(
    api: Target, posting_ids: list[str], rate: float, seconds: float, errors: list[str] | None = None
) -> list[float]:
    """Start a request every 1/rate s whatever the answers (no coordinated omission); the
    latency of each accepted one. Failures are counted in `errors` (raised without it)."""
    latencies: list[float] = []
    method, before, after = route(api)
    # Idle connections are dropped before uvicorn's 5 s keep-alive ends: reusing one the
    # server is closing at that moment fails the request (httpx.ReadError).
    async with httpx.AsyncClient(
        timeout=30, headers=api.headers, limits=httpx.Limits(max_connections=256, keepalive_expiry=2.0)
    ) as http:

        async def one(posting_id: str, body: dict[str, object]) -> None:
            started = time.perf_counter()
            try:
                url = f"{api.url}{before}{posting_id}{after}"
                (await http.request(method, url, json=body)).raise_for_status()
            except httpx.HTTPError as exc:
                if errors is None:
                    raise
                errors.append(type(exc).__name__)
                return
            latencies.append(time.perf_counter() - started)

        tasks = []
        start, run = time.perf_counter(), uuid.uuid4().hex[:8]
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(one(random.choice(posting_ids), revision(run, i))))
        await asyncio.gather(*tasks)
    return latencies


def _vegeta() -> str | None:
    found = shutil.which("vegeta") or str(Path.home() / "go" / "bin" / "vegeta")
    return found if Path(found).exists() else None


def fixed_rate(api: Target, posting_ids: list[str], rate: float, seconds: float) -> Load:
    """An open loop at `rate`: with vegeta when installed (`go install
    github.com/tsenart/vegeta/v12@v12.13.0`), else a Python client on the same cores."""
    vegeta = _vegeta()
    if vegeta is None:
        errors: list[str] = []
        latencies = asyncio.run(open_loop(api, posting_ids, rate, seconds, errors))
        return _load(latencies, seconds, len(errors), "httpx, open loop")
    with tempfile.TemporaryDirectory() as folder:
        # One target per request (vegeta's JSON format, the body inline), each its own content.
        run, (method, before, after) = uuid.uuid4().hex[:8], route(api)
        header = {"Authorization": [f"Bearer {TOKEN}"], "Content-Type": ["application/json"]}
        targets = Path(folder, "targets.jsonl")
        targets.write_text(
            "".join(
                json.dumps(
                    {
                        "method": method,
                        "url": f"{api.url}{before}{random.choice(posting_ids)}{after}",
                        "header": header,
                        "body": base64.b64encode(json.dumps(revision(run, n)).encode()).decode(),
                    }
                )
                + "\n"
                for n in range(int(rate * seconds) + 1)
            )
        )
        rated = [f"-rate={rate:g}/s", f"-duration={seconds:g}s", f"-targets={targets}"]
        command = [vegeta, "attack", "-format=json", *rated]
        attack = subprocess.run([*command, "-timeout=30s"], capture_output=True, check=True)
        encoded = subprocess.run(
            [vegeta, "encode", "--to", "csv"], input=attack.stdout, capture_output=True, check=True
        )
    latencies, errors = [], 0
    for row in csv.reader(io.StringIO(encoded.stdout.decode())):
        if row[1] == "200":
            latencies.append(int(row[2]) / 1e9)
        else:
            errors += 1
    return _load(latencies, seconds, errors, "vegeta, open loop")


def saturate(api: Target, posting_ids: list[str], clients: int, seconds: float) -> Load:
    """Closed loop, as fast as it goes: with wrk when installed (a Python client saturates
    a core before the API does)."""
    if shutil.which("wrk") is None:
        _, latencies = asyncio.run(closed_loop(api, posting_ids, clients, seconds))
        return _load(latencies, seconds, 0, "httpx")
    with (
        tempfile.NamedTemporaryFile("w", suffix=".txt") as ids,
        tempfile.NamedTemporaryFile("w", suffix=".json") as body,
    ):
        ids.write("\n".join(posting_ids))
        ids.flush()
        body.write(_marked())  # the factory's posting, its description marked for each request's own
        body.flush()
        script = str(Path(__file__).with_name("put_random.lua"))
        method, before, after = route(api)
        env = {
            **os.environ,
            "BENCH_METHOD": method,
            "BENCH_PATH_BEFORE": before,
            "BENCH_PATH_AFTER": after,
            "IDS_FILE": ids.name,
            "BODY_FILE": body.name,
            "BODY_MARK": _MARK,
            "BENCH_RUN": uuid.uuid4().hex[:8],
            "BENCH_TOKEN": TOKEN,
        }
        command = ["wrk", "-t1", f"-c{clients}", f"-d{seconds:.0f}s", "-s", script, api.url]
        output = subprocess.run(command, env=env, capture_output=True, text=True).stdout
    found = re.search(
        r"wrk: (\d+) requests, (\d+) errors .* p50 ([\d.]+) ms, p99 ([\d.]+) ms, p999 ([\d.]+) ms", output
    )
    if found is None:
        raise RuntimeError(f"wrk said: {output}")
    requests, errors, p50, p99, p999 = found.groups()
    return Load(int(requests) / seconds, float(p50), float(p99), float(p999), int(errors), "wrk")


def create_postings(api: Target, n: int) -> list[str]:
    async def run() -> list[str]:
        async with httpx.AsyncClient(timeout=30, headers=api.headers) as http:
            sem = asyncio.Semaphore(32)

            async def one() -> str:
                async with sem:
                    response = await http.post(f"{api.url}/postings", json=BODY)
                    response.raise_for_status()
                    return str(response.json()["id"])

            return await asyncio.gather(*(one() for _ in range(n)))

    return asyncio.run(run())


def producer_performance(kafka_bootstrap: str, topic: str, record_size: int, records: int) -> float:
    """Kafka's own producer benchmark (acks=all): records/s."""
    result = stack.KafkaServer(stack.StackSettings()).tool(
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic", topic, "--num-records", str(records), "--record-size", str(record_size),
        "--throughput", "-1", "--producer-props", f"bootstrap.servers={kafka_bootstrap}", "acks=all",
    )  # fmt: skip
    found = re.findall(r"([\d.]+) records/sec", result.stdout)
    if not found:
        raise RuntimeError(result.stdout + result.stderr)
    return float(found[-1])


def main(seconds: float = 20.0) -> None:
    kafka = local_kafka()
    try:
        _measure(kafka, seconds)
    finally:
        # A broker left holding every earlier run's topics (9,151 partition folders once)
        # spends the cores these numbers are about.
        delete_prefix(kafka)


def _measure(kafka: KafkaSettings, seconds: float) -> None:
    brokers = stack.StackSettings().brokers
    es = stack.StackSettings().elasticsearch_url
    api = ApiProcess(kafka, TOKEN, es)
    rows: list[tuple[str, Load]] = []
    try:
        api.wait_ready()
        postings = create_postings(api, 1000)
        saturation = saturate(api, postings, 32, seconds)
        rows.append(("32 clients, 1,000 postings (saturation)", saturation))
        breakdown = ""
        for rate in RATES:
            before = stages.scrape(api.url)
            rows.append(
                (f"{rate} updates/s offered, 1,000 postings", fixed_rate(api, postings, rate, seconds))
            )
            if rate == 100:
                breakdown = stages.table(before, stages.scrape(api.url))
        rows.append(("32 clients, one posting", saturate(api, postings[:1], 32, seconds)))
    finally:
        api.stop()
    sample = codec.posting_updates().encode(
        PostingUpdate(
            posting_id=postings[0],
            version=1,
            op=Op.UPDATED,
            idempotency_key=f"{postings[0]}:1",
            request_id="x" * 32,
            posting=postings.posting(0),
            last_update_time_millis=0,
            accepted_at=0,
        )
    )
    # The commands topic: same partitions, but not compacted (ProducerPerformance sends no keys).
    reference = producer_performance(
        kafka.bootstrap_servers, f"{kafka.topic_prefix}.commands", len(sample), 200_000
    )
    print(
        f"{brokers} broker(s), replication factor {kafka.replication_factor}, "
        f"{kafka.partitions} partitions, {seconds:.0f} s per phase"
    )
    print("| measure | updates/s | p50 ms | p99 ms | p99.9 ms | errors | client |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, load in rows:
        print(load.row(name))
    reference_row = f"Kafka ProducerPerformance, acks=all, {len(sample)}-byte records"
    print(f"| {reference_row} | {reference:,.0f} records/s | | | | | |")
    print(f"ratio saturation / ProducerPerformance: {saturation.rate / reference:.4f}")
    print("\nWhere a write's time goes at 100 updates/s (jobpost_write_stage_seconds):")
    print(breakdown)
