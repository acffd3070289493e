"""The operations panel off the hot path: 50 parallel lists of a board's dead letters over a
topic of 20,000 letters cost the API little memory and do not hold up a write."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runtime.kafka_clients import KafkaClients
from schemas import codec
from schemas.dead_letters import DeadLetterHeaders
from schemas.model import Op, PostingUpdate
from tests import postings
from tests.processes import running_api, wait_until

pytestmark = pytest.mark.serial  # a load, with bounds on memory and on a write's time

LETTERS = 20_000
PARALLEL = 50
TOKEN = "dead-letter-load-token"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def write_letters(kafka, topics, count: int, base_ms: int) -> None:
    producer = KafkaClients(kafka).producer(linger_ms=50)
    for n in range(count):
        update = PostingUpdate(
            f"p{n}", 0, Op.CREATED, f"p{n}:0", "r", postings.posting(n, title=f"Title {n}"), 1, 1
        )
        headers = DeadLetterHeaders("HTTP 400: rejected", topics.postings, 0, n, 1, base_ms, base_ms + n)
        producer.produce(
            topics.dlq("linkedin"),
            codec.posting_updates().encode(update),
            f"p{n}".encode(),
            headers=headers.to_headers(),
        )
        if n % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def test_fifty_parallel_lists_of_twenty_thousand_letters_cost_little_and_hold_no_write(
    kafka, topics, elasticsearch_url
):
    base_ms = int(time.time() * 1000)
    write_letters(kafka, topics, LETTERS, base_ms)
    with running_api(kafka, TOKEN, elasticsearch_url) as api:
        ops = api.client

        def newest_listed() -> bool:
            letters = ops.request("GET", "/ops/dead-letters/linkedin", expect=200)["letters"]
            return len(letters) == 500 and letters[0]["at"] == base_ms + LETTERS - 1

        wait_until(newest_listed, 120, "the index to reach the newest letter")
        posting = ops.create(title="Written during the lists")
        ops.replace(posting["id"], title="warm")  # the write path warmed up
        pid = api.popen.pid
        before = rss_mib(pid)
        peak = before
        sampling = threading.Event()

        def sample() -> None:
            nonlocal peak
            while not sampling.is_set():
                peak = max(peak, rss_mib(pid))
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        start = threading.Barrier(PARALLEL + 1)

        def listed(_: int) -> int:
            start.wait()
            return len(ops.request("GET", "/ops/dead-letters/linkedin", expect=200)["letters"])

        def timed_write() -> float:
            start.wait()
            time.sleep(0.05)  # while the lists are being answered
            began = time.perf_counter()
            ops.replace(posting["id"], title="Written during the lists")
            return time.perf_counter() - began

        try:
            with ThreadPoolExecutor(PARALLEL + 1) as pool:
                write = pool.submit(timed_write)
                counts = list(pool.map(listed, range(PARALLEL)))
                write_s = write.result()
        finally:
            sampling.set()
            sampler.join()

    assert counts == [500] * PARALLEL
    assert peak - before < 50, f"RSS grew {peak - before:.1f} MiB (from {before:.0f} MiB)"
    assert write_s < 1.0, f"the write took {write_s:.2f} s"
    print(
        f"RSS {before:.0f} MiB -> peak {peak:.0f} MiB (+{peak - before:.1f}); write {write_s * 1000:.0f} ms"
    )
