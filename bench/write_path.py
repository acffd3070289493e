"""Write path: accepted updates per second and latency through the real HTTP API.

(a) 32 concurrent clients over 1,000 postings, closed loop (as fast as it goes), then an
    open loop at 200 updates/s for latency; (b) 32 clients on one posting; (c) Kafka's own
    ProducerPerformance (acks=all, same record size) on the same broker. Prints one table.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import local_kafka, percentiles
from jobpost import stack
from jobpost.processes import ApiProcess
from schemas import codec
from schemas.model import Op, Posting, PostingUpdate

TOKEN = "bench"
BODY = {"title": "Senior Stream Processing Engineer", "description": "Kafka and Python. " * 20, "notes": ""}


async def closed_loop(
    api: ApiProcess, posting_ids: list[str], clients: int, seconds: float
) -> tuple[int, list[float]]:
    latencies: list[float] = []
    deadline = time.monotonic() + seconds

    async def client() -> None:
        async with httpx.AsyncClient(timeout=30, headers=api.headers) as http:
            while time.monotonic() < deadline:
                posting_id = random.choice(posting_ids)
                started = time.perf_counter()
                response = await http.put(f"{api.url}/postings/{posting_id}", json=BODY)
                response.raise_for_status()
                latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(client() for _ in range(clients)))
    return len(latencies), latencies


async def open_loop(api: ApiProcess, posting_ids: list[str], rate: float, seconds: float) -> list[float]:
    latencies: list[float] = []
    # Idle connections are dropped before uvicorn's 5 s keep-alive ends: reusing one the
    # server is closing at that moment fails the request (httpx.ReadError).
    async with httpx.AsyncClient(
        timeout=30, headers=api.headers, limits=httpx.Limits(max_connections=64, keepalive_expiry=2.0)
    ) as http:

        async def one(posting_id: str) -> None:
            started = time.perf_counter()
            (await http.put(f"{api.url}/postings/{posting_id}", json=BODY)).raise_for_status()
            latencies.append(time.perf_counter() - started)

        tasks = []
        start = time.perf_counter()
        for i in range(int(rate * seconds)):
            await asyncio.sleep(max(0.0, start + i / rate - time.perf_counter()))
            tasks.append(asyncio.create_task(one(random.choice(posting_ids))))
        await asyncio.gather(*tasks)
    return latencies


def load(api: ApiProcess, posting_ids: list[str], clients: int, seconds: float, think_ms: int = 0) -> str:
    """Closed-loop load: with wrk when installed (a Python client saturates a core first)."""
    if shutil.which("wrk") is None:
        n, latencies = asyncio.run(closed_loop(api, posting_ids, clients, seconds))
        return f"{n / seconds:.0f} updates/s; {percentiles(latencies)} (httpx client)"
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as ids:
        ids.write("\n".join(posting_ids))
        ids.flush()
        script = str(Path(__file__).with_name("put_random.lua"))
        env = {**os.environ, "IDS_FILE": ids.name, "BENCH_TOKEN": TOKEN, "BENCH_DELAY_MS": str(think_ms)}
        command = ["wrk", "-t1", f"-c{clients}", f"-d{seconds:.0f}s", "-s", script, api.url]
        result = subprocess.run(command, env=env, capture_output=True, text=True)
    rate = next((line for line in result.stdout.splitlines() if line.startswith("Requests/sec")), "")
    summary = next((line for line in result.stdout.splitlines() if line.startswith("wrk:")), result.stdout)
    return f"{rate.split()[-1] if rate else '?'} updates/s; {summary} (wrk)"


def create_postings(api: ApiProcess, n: int) -> list[str]:
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


def producer_performance(kafka_bootstrap: str, topic: str, record_size: int, records: int) -> str:
    result = stack.KafkaServer(stack.StackSettings()).tool(
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic", topic, "--num-records", str(records), "--record-size", str(record_size),
        "--throughput", "-1", "--producer-props", f"bootstrap.servers={kafka_bootstrap}", "acks=all",
    )  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if "records/sec" in line]
    return lines[-1] if lines else result.stdout + result.stderr


def main(seconds: float = 20.0) -> None:
    kafka = local_kafka()
    es = stack.StackSettings().elasticsearch_url
    api = ApiProcess(kafka, TOKEN, es)
    try:
        api.wait_ready()
        postings = create_postings(api, 1000)
        print(f"(a) 32 clients, 1,000 postings: {load(api, postings, 32, seconds)}")
        if shutil.which("wrk"):
            paced = load(api, postings, 10, seconds, think_ms=40)
            print(f"(a) ~200 updates/s (10 connections, 40 ms think time): {paced}")
        else:
            latencies = asyncio.run(open_loop(api, postings, 200, seconds))
            print(f"(a) open loop at 200 updates/s: {percentiles(latencies)}")
        print(f"(b) 32 clients, one posting: {load(api, postings[:1], 32, seconds)}")
    finally:
        api.stop()
    sample = codec.posting_updates().encode(
        PostingUpdate(
            posting_id=postings[0], version=1, op=Op.UPDATED, idempotency_key=f"{postings[0]}:1",
            request_id="x" * 32, posting=Posting(**BODY), last_update_time_millis=0, accepted_at=0,
        )
    )  # fmt: skip
    # The commands topic: same partitions, but not compacted (ProducerPerformance sends no keys).
    line = producer_performance(
        kafka.bootstrap_servers, f"{kafka.topic_prefix}.commands", len(sample), 200_000
    )
    print(f"(c) ProducerPerformance acks=all, {len(sample)}-byte records: {line}")
