"""Delivery: the key-ordered runner against a plain one-record-at-a-time consumer.

1,000 postings x (create + 3 updates) written straight to a postings topic, the sandbox
answering after 50 ms. Then the end-to-end latency from accepted write to applied at both
boards, through the real API, sequencer and consumers, with healthy boards.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import aiohttp
import httpx

from bench.common import local_kafka, percentiles
from consumers.board_tokens import token_source
from consumers.boards.base import JobAction, Operation
from consumers.boards.linkedin import LinkedInAdapter, LinkedInSettings
from consumers.config import ConsumerSettings
from consumers.main import client_session, destination_for
from consumers.outcomes import DELIVERIES
from consumers.runner import DeliveryRunner
from jobpost_dev import stack
from jobpost_dev.processes import ApiProcess, Process, answers, free_port, kafka_env, wait_until
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.topics import delete_topics
from schemas import codec
from schemas.model import Destination, Op, PostingUpdate
from tests import postings

LATENCY_MS = 50
POSTINGS, VERSIONS = 1000, 4


def write_updates(kafka: KafkaSettings) -> int:
    producer = KafkaClients(kafka).producer()
    # An accepted write's times: LinkedIn's listedAt is the first version's, and a job listed
    # at 0 (1970) has long expired, so the board refuses every UPDATE of it.
    now_ms = int(time.time() * 1000)
    for n in range(POSTINGS):
        posting_id = f"bench-{n}-{uuid.uuid4().hex[:6]}"
        for version in range(VERSIONS):
            update = PostingUpdate(
                posting_id=posting_id,
                version=version,
                op=Op.CREATED if version == 0 else Op.UPDATED,
                idempotency_key=f"{posting_id}:{version}",
                request_id=uuid.uuid4().hex,
                posting=postings.posting(0, title="Bench"),
                last_update_time_millis=now_ms,
                accepted_at=now_ms,
            )
            producer.produce(
                f"{kafka.topic_prefix}.postings", key=posting_id, value=codec.posting_updates().encode(update)
            )
        producer.poll(0)
    producer.flush(30)
    return POSTINGS * VERSIONS


def delivered() -> float:
    return sum(s.value for m in DELIVERIES.collect() for s in m.samples if s.name.endswith("_total"))


async def runner_rate(kafka: KafkaSettings, sandbox: str, total: int) -> float:
    settings = ConsumerSettings(
        kafka=kafka,
        destination=Destination.LINKEDIN,
        group_id=f"{kafka.topic_prefix}-runner",
        linkedin=LinkedInSettings(base_url=f"{sandbox}/linkedin"),
    )
    async with client_session(settings) as client:
        runner = DeliveryRunner(settings, destination_for(settings, client))
        task = asyncio.create_task(runner.run())
        before = delivered()
        while delivered() - before < 1:
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        while delivered() - before < total:
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - started
        runner.stop()
        await task
    return (total - 1) / elapsed


async def plain_rate(kafka: KafkaSettings, sandbox: str, sample: int) -> float:
    """poll one record, call the board, commit; repeat."""
    consumer = KafkaClients(kafka).member(f"{kafka.topic_prefix}-plain")
    consumer.subscribe([f"{kafka.topic_prefix}.postings"])
    settings = ConsumerSettings(kafka=kafka, linkedin=LinkedInSettings(base_url=f"{sandbox}/linkedin"))
    async with aiohttp.ClientSession() as client:
        board = LinkedInAdapter(client, settings.linkedin)
        tokens = token_source(client, settings.destination, settings.linkedin)
        done, started = 0, None
        while done < sample:
            message = consumer.poll(1.0)
            if message is None or message.error() or message.value() is None:
                continue
            started = started or time.perf_counter()
            update = codec.posting_updates().decode(message.value() or b"")
            operation = Operation.CREATE if update.op == Op.CREATED else Operation.UPDATE
            action = JobAction(operation, update.posting_id, update.employer, update)
            await board.send([action], await tokens.token())
            consumer.commit(message, asynchronous=False)
            done += 1
    consumer.close()
    return sample / (time.perf_counter() - (started or 0))


def end_to_end(kafka: KafkaSettings, sandbox: str, env: dict[str, str], writes: int = 200) -> list[float]:
    api = ApiProcess(kafka, "bench", stack.StackSettings().elasticsearch_url)
    consumers = [Process(f"bench-{d}", ["consumer", d], env) for d in ("linkedin", "indeed")]
    try:
        api.wait_ready()
        ids = []
        with httpx.Client(headers=api.headers, timeout=30) as http:
            for n in range(writes):
                ids.append(http.post(f"{api.url}/postings", json=postings.body(n, title=f"E2E {n}")).json())
                time.sleep(0.02)
        latencies = []
        for posting in ids:
            for board in ("linkedin", "indeed"):
                url = f"{sandbox}/_sandbox/{board}/postings/{posting['id']}"
                seen = wait_until(lambda: httpx.get(url).json().get("applied_at_ms"), 60, "delivery")
                latencies.append((seen[0] - posting["last_update_time_millis"]) / 1000)
        return latencies
    finally:
        api.stop()
        for c in consumers:
            c.stop()


def main() -> None:
    port = free_port()
    sandbox_process = Process("bench-sandbox", ["sandbox", "--port", str(port)], {})
    sandbox = f"http://127.0.0.1:{port}"
    wait_until(lambda: answers(f"{sandbox}/docs"), 30, "sandbox")
    made: list[KafkaSettings] = []  # each part's topics and groups, deleted at the end
    try:
        httpx.put(f"{sandbox}/_sandbox/linkedin/faults", json={"mode": "none", "latency_ms": LATENCY_MS})
        kafka = local_kafka()
        made.append(kafka)
        total = write_updates(kafka)
        runner = asyncio.run(runner_rate(kafka, sandbox, total))
        plain = asyncio.run(plain_rate(kafka, sandbox, 100))
        ideal = ConsumerSettings().max_in_flight / (LATENCY_MS / 1000)
        print(
            f"runner: {runner:.0f} records/s; plain consumer: {plain:.1f} records/s ({runner / plain:.1f}x)"
        )
        print(f"ideal max_in_flight / latency: {ideal:.0f} records/s; runner reaches {runner / ideal:.0%}")
        httpx.delete(f"{sandbox}/_sandbox")
        fresh = local_kafka()
        made.append(fresh)
        env = {
            **kafka_env(fresh),
            "JOBPOST_CONSUMER_LINKEDIN__BASE_URL": f"{sandbox}/linkedin",
            "JOBPOST_CONSUMER_INDEED__BASE_URL": f"{sandbox}/indeed",
        }
        latencies = end_to_end(fresh, sandbox, env)
        print(f"accepted write -> applied at a board (healthy boards): {percentiles(latencies)}")
    finally:
        sandbox_process.stop()
        # Left behind, each prefix's ~100 partitions cost the broker at rest (it checks every
        # log's retention each second). Only the topics: a group of the first part still had a
        # member 60 s after the run (delete_prefix met NON_EMPTY_GROUP).
        for settings in made:
            delete_topics(settings)
