"""A board consumer's restart with its state on disk (`consumers.delivery_states`).

1,000,000 postings' DeliveryStates are put in LinkedIn's local stores (6 partitions, as a
consumer leaves them), `jobpost.deliveries` holds a tail of 10,000 states past their
checkpoints, and `jobpost.postings` 1,000 versions already delivered then a new posting.
A fresh process starts a runner over that state dir and reports the time from its start to
the new posting's board call (restore, assignment, skipping the delivered ones), the
records its restore read, and its memory. Then the same with the stores wiped (a cold
rebuild of the 10,000 records; the 1,000 old versions, now unknown, are delivered again).

`python -m bench.board_restart` against the local broker (127.0.0.1:9092, started already).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import Producer
from pydantic import SecretStr

from consumers.board_tokens import StaticToken
from consumers.boards.base import Delivered, ElementOutcome, TaskOutcome
from consumers.config import ConsumerSettings
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.destination.shared import SharedDestination
from consumers.runner import DeliveryRunner
from runtime.deliveries import state_record
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.stores import REBUILDS, RESTORED, PartitionStore, StateSettings, Stores, source_identity
from runtime.topics import ensure_topics
from schemas import codec
from schemas.deliveries import delivery_state
from schemas.enums import DeliveryStatus
from schemas.model import Destination, Op, PostingUpdate
from schemas.partitioning import partition_for
from schemas.topics import Topics
from tests import postings

STATES, TAIL, OLD_POSTINGS, PARTITIONS = 1_000_000, 10_000, 1_000, 6


def fill(kafka: KafkaSettings, state_dir: Path) -> None:
    topics = Topics(kafka.topic_prefix)
    stores = Stores(StateSettings(dir=state_dir), kafka, "linkedin", topics.deliveries)
    identity = source_identity(kafka, topics.deliveries)
    opened = [PartitionStore(stores.path(p), identity) for p in range(PARTITIONS)]
    pending: list[list[tuple[bytes, bytes | None]]] = [[] for _ in range(PARTITIONS)]
    for n in range(STATES):
        posting_id = f"bench-{n}"
        state = delivery_state(
            Destination.LINKEDIN, posting_id, status=DeliveryStatus.DELIVERED, delivered_version=0
        )
        partition = partition_for(posting_id, PARTITIONS)
        pending[partition].append((posting_id.encode(), codec.delivery_states().encode(state)))
        if len(pending[partition]) == 10_000:
            opened[partition].write(pending[partition], checkpoint=0)
            pending[partition].clear()
    for store, puts in zip(opened, pending, strict=True):
        store.write(puts, checkpoint=0)
        store.close()
    producer = KafkaClients(kafka).producer()
    for n in range(TAIL):  # written after the checkpoints (0): the tail a restart reads
        posting_id = f"tail-{n}"
        state = delivery_state(
            Destination.LINKEDIN, posting_id, status=DeliveryStatus.DELIVERED, delivered_version=0
        )
        state_record(topics.deliveries, partition_for(posting_id, PARTITIONS), state).produce(producer)
        producer.poll(0)
    write_postings(kafka, producer, [f"bench-{n}" for n in range(OLD_POSTINGS)])  # delivered already


def write_postings(kafka: KafkaSettings, producer: Producer, posting_ids: list[str]) -> None:
    for posting_id in posting_ids:
        update = PostingUpdate(
            posting_id,
            0,
            Op.CREATED,
            f"{posting_id}:0",
            uuid.uuid4().hex,
            postings.posting(0, title="Bench"),
            0,
            0,
        )
        value = codec.posting_updates().encode(update)
        producer.produce(Topics(kafka.topic_prefix).postings, key=posting_id, value=value)
        producer.poll(0)
    assert producer.flush(30) == 0


class FirstCall:
    """A board (`consumers.boards.base.BoardAdapter`) that notes when it first sees a posting."""

    destination = Destination.LINKEDIN
    max_batch = 100
    confirms = False

    def __init__(self, awaited: str) -> None:
        self.awaited = awaited
        self.at: float | None = None
        self.calls = 0

    async def send(self, updates: Sequence[PostingUpdate], token: str) -> list[ElementOutcome]:
        self.calls += len(updates)
        if any(u.posting_id == self.awaited for u in updates) and self.at is None:
            self.at = time.monotonic()
        return [Delivered() for _ in updates]

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        return {}


def rss_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def restart(bootstrap: str, prefix: str, state_dir: str, new_posting: str) -> None:
    """In a fresh process: start a runner and wait for the new posting's board call."""
    kafka = KafkaSettings(
        bootstrap_servers=bootstrap,
        topic_prefix=prefix,
        partitions=PARTITIONS,
        replication_factor=1,
        min_insync_replicas=1,
    )
    settings = ConsumerSettings(
        kafka=kafka,
        state=StateSettings(dir=Path(state_dir)),
        destination=Destination.LINKEDIN,
        group_id=f"{prefix}-{uuid.uuid4().hex[:6]}",
    )
    before = rss_mib("VmRSS")
    board = FirstCall(new_posting)

    async def main() -> float:
        destination = SharedDestination(
            board, StaticToken(SecretStr("bench")), RateBudget(None, None), Circuit()
        )
        runner = DeliveryRunner(settings, destination)
        started = time.monotonic()
        task = asyncio.create_task(runner.run())
        while board.at is None:
            await asyncio.sleep(0.01)
        runner.stop()
        await task
        return board.at - started

    elapsed = asyncio.run(main())
    read = sum(s.value for m in RESTORED.collect() for s in m.samples if s.name.endswith("_total"))
    rebuilt = sum(s.value for m in REBUILDS.collect() for s in m.samples if s.name.endswith("_total"))
    print(
        json.dumps(
            {
                "first_delivery_s": round(elapsed, 2),
                "restored_records": read,
                "rebuilt_stores": rebuilt,
                "board_calls": board.calls,
                "rss_before_mib": round(before),
                "rss_peak_mib": round(rss_mib("VmHWM")),
            }
        )
    )


def run_restart(kafka: KafkaSettings, state_dir: Path) -> dict[str, float]:
    """A posting nobody delivered yet, then a runner in a fresh process until it is delivered."""
    new_posting = f"new-{uuid.uuid4().hex[:8]}"
    write_postings(kafka, KafkaClients(kafka).producer(), [new_posting])
    command = [sys.executable, "-m", "bench.board_restart", "restart"]
    command += [kafka.bootstrap_servers, kafka.topic_prefix, str(state_dir), new_posting]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def main() -> None:
    kafka = KafkaSettings(  # the brokers from JOBPOST_KAFKA_BOOTSTRAP_SERVERS (or the file), as any component
        topic_prefix=f"bench{uuid.uuid4().hex[:8]}",
        partitions=PARTITIONS,
        replication_factor=1,  # the local broker
        min_insync_replicas=1,
    )
    ensure_topics(kafka)
    state_dir = Path(tempfile.mkdtemp(prefix="board-restart-"))
    try:
        started = time.monotonic()
        fill(kafka, state_dir)
        size = sum(f.stat().st_size for f in state_dir.rglob("*") if f.is_file()) / 2**20
        print(f"filled {STATES:,} states ({size:.0f} MiB on disk) in {time.monotonic() - started:.0f} s")
        print("warm restart:", run_restart(kafka, state_dir))
        shutil.rmtree(state_dir)
        print("cold rebuild of the tail only:", run_restart(kafka, state_dir))
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
        names = [
            spec.name
            for spec in Topics(kafka.topic_prefix).specs(kafka.partitions, kafka.min_insync_replicas)
        ]
        KafkaClients(kafka).admin().delete_topics(names)  # the shared broker stays small


if __name__ == "__main__":
    if sys.argv[1:2] == ["restart"]:
        restart(*sys.argv[2:6])
    else:
        main()
