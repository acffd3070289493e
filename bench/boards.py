"""Delivery to boards with budgets: how much of a board's rate budget the consumers use, how
many records a call carries, and how long a version takes from its write to the board.

The sandbox stands in for both boards (`jobpost sandbox`), real `jobpost consumer`
processes deliver, versions are written straight to `jobpost.postings` as the sequencer
would (their `accepted_at` is the write time).

1. Budget: both boards admit `BUDGET` records a minute (a rolling 60 s, 429 beyond it);
   LinkedIn's consumer is told the budget (LinkedIn publishes its throttles), Indeed's is
   not (it finds it from the 429s). A backlog of 4 versions of 600 postings, more than
   `WINDOWS` minutes of budget. Used = the records the board applied within `WINDOWS`
   windows of 61 s from the first call (the consumer's window is a second longer than the
   board's) over `WINDOWS` times the budget.
2. Latency: no budget, 50 versions a second over 200 postings for 30 s; p50/p99 from the
   write to the version applied at each board (LinkedIn's once its task succeeded).
3. Write → live, with the boards' own delays: LinkedIn's tasks run `TASK_DELAY_S` (its
   documents say a task takes about five minutes), Indeed indexes a job `INDEXING_DELAY_S`
   after receiving it ("minutes to hours"), the consumers at their default polling (tasks
   every 2 s, a job not yet live read back every 60 s). 100 postings created over 20 s;
   p50/p99 from the write to the job live at the board (the sandbox's `since`), and to the
   consumer's delivery state saying so (the record's time in `jobpost.deliveries`: what
   `GET /postings/{id}/deliveries` shows an employer).
"""

from __future__ import annotations

import time
import uuid

import httpx
from confluent_kafka import Message

from bench.common import delete_prefix, local_kafka, percentiles
from jobpost_dev.processes import Process, free_port, kafka_env, wait_until
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas import codec
from schemas.enums import ListingStatus
from schemas.model import Op, PostingUpdate
from schemas.topics import Topics
from tests import postings

BUDGET, WINDOWS, POSTINGS, VERSIONS = 600, 3, 600, 4
TASK_DELAY_S, INDEXING_DELAY_S, LIVE_POSTINGS = 60, 120, 100
BOARDS = ("linkedin", "indeed")


class Writer:
    def __init__(self, kafka: KafkaSettings) -> None:
        self.topic = Topics(kafka.topic_prefix).postings
        self.producer = KafkaClients(kafka).producer()
        self.next: dict[str, int] = {}
        self.written_at: dict[tuple[str, int], int] = {}

    def write(self, posting_ids: list[str]) -> None:
        for posting_id in posting_ids:
            version = self.next.get(posting_id, 0)
            self.next[posting_id] = version + 1
            now = time.time_ns() // 1_000_000
            update = PostingUpdate(
                posting_id,
                version,
                Op.CREATED if version == 0 else Op.UPDATED,
                f"{posting_id}:{version}",
                uuid.uuid4().hex,
                postings.posting(len(posting_id), title=f"Bench {posting_id} v{version}"),
                now,
                now,
            )
            self.producer.produce(self.topic, key=posting_id, value=codec.posting_updates().encode(update))
            self.written_at[(posting_id, version)] = now
            self.producer.poll(0)
        self.producer.flush(30)


def applied(sandbox: str, board: str, posting_id: str) -> list[tuple[int, int]]:
    """(version, applied at ms) of each version the board applied."""
    answer = httpx.get(f"{sandbox}/_sandbox/{board}/postings/{posting_id}", timeout=10)
    if answer.status_code != 200:
        return []
    seen = answer.json()
    return list(zip(seen["versions"], seen["applied_at_ms"], strict=True))


class Consumers:
    """One `jobpost consumer` per board, each serving /metrics on a port of its own."""

    def __init__(
        self, kafka: KafkaSettings, sandbox: str, env: dict[str, dict[str, str]], *, fast_tasks: bool = True
    ) -> None:
        common = {
            **kafka_env(kafka),
            "JOBPOST_CONSUMER_LINKEDIN__BASE_URL": f"{sandbox}/linkedin",
            "JOBPOST_CONSUMER_INDEED__BASE_URL": f"{sandbox}/indeed",
            "JOBPOST_CONSUMER_DELIVER_EVERY_VERSION": "true",  # the backlog's every record is the load
            **({"JOBPOST_CONSUMER_TASK_POLL_INTERVAL_S": "0.5"} if fast_tasks else {}),
        }
        self.ports = {b: free_port() for b in BOARDS}
        self.processes = [
            Process(
                f"bench-boards-{b}",
                ["consumer", b],
                {**common, "JOBPOST_CONSUMER_METRICS_PORT": str(self.ports[b]), **env.get(b, {})},
            )
            for b in BOARDS
        ]

    def records_per_call(self, board: str) -> float:
        """Mean records per submission call (`jobpost_delivery_batch_records`), polls apart."""
        text = httpx.get(f"http://127.0.0.1:{self.ports[board]}/metrics", timeout=5).text
        found = {}
        for line in text.splitlines():
            for part in ("sum", "count"):
                if line.startswith(f"jobpost_delivery_batch_records_{part}{{"):
                    found[part] = float(line.rsplit(" ", 1)[1])
        return found.get("sum", 0.0) / max(1.0, found.get("count", 0.0))

    def stop(self) -> None:
        for process in self.processes:
            process.stop()


def budget_run(kafka: KafkaSettings, sandbox: str) -> None:
    for board in BOARDS:
        httpx.put(
            f"{sandbox}/_sandbox/{board}/limits", json={"records_per_minute": BUDGET}
        ).raise_for_status()
    writer = Writer(kafka)
    postings = [f"budget-{n}-{uuid.uuid4().hex[:6]}" for n in range(POSTINGS)]
    for _ in range(VERSIONS):
        writer.write(postings)
    started = Consumers(kafka, sandbox, {"linkedin": {"JOBPOST_CONSUMER_RECORDS_PER_MINUTE": str(BUDGET)}})
    per_call: dict[str, float] = {}
    try:
        wait_until(
            lambda: all(
                httpx.get(f"{sandbox}/_sandbox/{b}/stats").json()["records"] >= BUDGET * (WINDOWS + 1)
                for b in BOARDS
            ),
            61 * (WINDOWS + 2),
            "the boards to apply more than the measured windows",
            interval=1,
        )
        per_call = {b: started.records_per_call(b) for b in BOARDS}
    finally:
        started.stop()
    for board in BOARDS:
        times = sorted(at for p in postings for _, at in applied(sandbox, board, p))
        start = times[0] - 500
        used = sum(1 for at in times if at < start + WINDOWS * 61_000)
        stats = httpx.get(f"{sandbox}/_sandbox/{board}/stats").json()
        calls = stats["calls"] - stats["throttled"]
        rate = used / (WINDOWS * 61)
        told = "budget told" if board == "linkedin" else "budget found"
        print(
            f"{board} ({told}): {rate:.2f} records/s of a "
            f"{BUDGET / 60:.2f}/s budget ({100 * used / (WINDOWS * BUDGET):.1f} % used); "
            f"{per_call[board]:.1f} records per submission, {calls / max(1, stats['records']):.3f} calls per "
            f"record (task polls included); {stats['throttled']} 429s in {stats['calls']} calls; "
            f"most in any 60 s {stats['max_records_in_60s']}"
        )


def latency_run(kafka: KafkaSettings, sandbox: str, per_second: int = 50, seconds: int = 30) -> None:
    httpx.delete(f"{sandbox}/_sandbox").raise_for_status()
    writer = Writer(kafka)
    postings = [f"latency-{n}-{uuid.uuid4().hex[:6]}" for n in range(200)]
    started = Consumers(kafka, sandbox, {})
    try:
        writer.write(postings[:1])  # both consumers up and delivering before the clock starts
        for board in BOARDS:
            wait_until(lambda: applied(sandbox, board, postings[0]), 60, f"{board} to start")
        begin = time.monotonic()
        for tick in range(per_second * seconds // 10):
            wait_until(lambda: time.monotonic() - begin >= tick / (per_second / 10), 5, "the next tick")
            writer.write([postings[(tick * 10 + n) % len(postings)] for n in range(10)])
        wanted = {(p, v) for (p, v) in writer.written_at}
        for board in BOARDS:
            wait_until(
                lambda: {(p, v) for p in postings for v, _ in applied(sandbox, board, p)} >= wanted,
                120,
                f"{board} to apply every version",
                interval=1,
            )
    finally:
        started.stop()
    for board in BOARDS:
        lags = [
            (at - writer.written_at[(p, v)]) / 1000 for p in postings for v, at in applied(sandbox, board, p)
        ]
        stats = httpx.get(f"{sandbox}/_sandbox/{board}/stats").json()
        calls, records = stats["calls"], stats["records"]
        print(
            f"{board}: write -> applied {percentiles(lags)}; {calls} calls for {records} records "
            f"({calls / max(1, records):.3f} calls per record, LinkedIn's task polls included)"
        )


def live_run(kafka: KafkaSettings, sandbox: str, seconds: int = 20) -> None:
    httpx.delete(f"{sandbox}/_sandbox").raise_for_status()
    httpx.put(f"{sandbox}/_sandbox/linkedin/limits", json={"task_delay_s": TASK_DELAY_S}).raise_for_status()
    httpx.put(
        f"{sandbox}/_sandbox/indeed/limits", json={"indexing_delay_s": INDEXING_DELAY_S}
    ).raise_for_status()
    writer = Writer(kafka)
    postings = [f"live-{n}-{uuid.uuid4().hex[:6]}" for n in range(LIVE_POSTINGS)]
    started = Consumers(kafka, sandbox, {}, fast_tasks=False)
    try:
        begin = time.monotonic()
        for n, posting_id in enumerate(postings):
            wait_until(lambda: time.monotonic() - begin >= n * seconds / len(postings), 5, "the next write")
            writer.write([posting_id])
        for board in BOARDS:
            wait_until(
                lambda: len(live_at_board(sandbox, board, postings)) == len(postings),
                TASK_DELAY_S + INDEXING_DELAY_S + 300,
                f"every job live at {board}",
                interval=2,
            )
        shown: dict[str, dict[str, int]] = {b: {} for b in BOARDS}
        wait_until(
            lambda: all(len(shown_live(kafka, b, shown[b])) == len(postings) for b in BOARDS),
            300,
            "every delivery state to say live",
            interval=5,
        )
    finally:
        started.stop()
    for board in BOARDS:
        at_board = live_at_board(sandbox, board, postings)
        written = {p: writer.written_at[(p, 0)] for p in postings}
        to_board = [(at_board[p] - written[p]) / 1000 for p in postings]
        to_us = [(shown[board][p] - written[p]) / 1000 for p in postings]
        print(
            f"{board}: write -> live at the board {percentiles(to_board)}; "
            f"write -> live in /deliveries {percentiles(to_us)}"
        )


def live_at_board(sandbox: str, board: str, postings: list[str]) -> dict[str, int]:
    """posting id -> when its job went live at the board (the sandbox's `since`)."""
    found = {}
    for posting_id in postings:
        jobs = httpx.get(f"{sandbox}/_sandbox/{board}/jobs", params={"posting_id": posting_id}, timeout=10)
        for job in jobs.json()["jobs"]:
            if job["status"] == "live":
                found[posting_id] = job["since"]
    return found


def shown_live(kafka: KafkaSettings, board: str, shown: dict[str, int]) -> dict[str, int]:
    """posting id -> the time of the first delivery state of `board` saying its job is live."""
    topic = Topics(kafka.topic_prefix).deliveries

    def seen(message: Message) -> None:
        value = message.value()
        if value is None:
            return
        state = codec.delivery_states().decode(value)
        live = state.job is not None and state.job.status == ListingStatus.LIVE
        if state.destination == board and live and state.posting_id not in shown:
            shown[state.posting_id] = message.timestamp()[1]

    partitions = KafkaClients(kafka).admin().list_topics(topic, timeout=10).topics[topic].partitions
    replay(kafka, topic, sorted(partitions), seen)
    return shown


def main() -> None:
    port = free_port()
    sandbox = f"http://127.0.0.1:{port}"
    process = Process("bench-sandbox", ["sandbox", "--port", str(port)], {})
    kafka = local_kafka()
    try:
        wait_until(lambda: _answers(sandbox), 30, "the sandbox")
        budget_run(kafka, sandbox)
        for run in (latency_run, live_run):
            run_kafka = local_kafka()
            try:
                run(run_kafka, sandbox)
            finally:
                delete_prefix(run_kafka)
    finally:
        process.stop()
        delete_prefix(kafka)


def _answers(url: str) -> bool:
    try:
        return httpx.delete(f"{url}/_sandbox", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False
