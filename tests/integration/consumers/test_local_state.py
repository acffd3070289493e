"""The board consumer's local state (consumers.delivery_states): a restart reads only the tail of
`jobpost.deliveries`, a store it cannot trust is rebuilt from Kafka, and either way the
board sees each version once and a failing posting keeps its retry budget."""

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from confluent_kafka import TopicPartition
from prometheus_client import REGISTRY

from consumers.boards.linkedin import LinkedInSettings
from consumers.config import ConsumerSettings
from consumers.main import client_session, destination_for
from consumers.retry import RetrySettings
from consumers.runner import DeliveryRunner
from runtime import records
from runtime.deliveries import state_record
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from runtime.stores import PartitionStore, StateSettings, Stores
from schemas import codec
from schemas.deliveries import DeliveryState, delivery_state
from schemas.enums import DeliveryStatus
from schemas.model import Destination, Op, PostingUpdate
from schemas.partitioning import partition_for
from tests import postings


def write_postings(kafka, topic: str, posting_ids: list[str], version: int = 0) -> None:
    producer = KafkaClients(kafka).producer()
    now = time.time_ns() // 1_000_000  # a job listed long ago would be past LinkedIn's lifetime
    for posting_id in posting_ids:
        update = PostingUpdate(
            posting_id,
            version,
            Op.CREATED if version == 0 else Op.UPDATED,
            f"{posting_id}:{version}",
            uuid.uuid4().hex,
            postings.posting(0, title=f"Role {posting_id} v{version}", notes=""),  # each its own content
            now,
            now,
        )
        producer.produce(topic, key=posting_id, value=codec.posting_updates().encode(update))
    assert producer.flush(10) == 0


def write_other_destination(kafka, topic: str, count: int) -> None:
    """Indeed's states and a record nobody can read, on the partitions LinkedIn's store
    follows: its restore reads them and keeps none."""
    producer = KafkaClients(kafka).producer()
    for n in range(count - 1):
        posting_id = f"indeed-only-{n}"
        state = delivery_state(
            Destination.INDEED, posting_id, status=DeliveryStatus.DELIVERED, delivered_version=0
        )
        record = state_record(topic, partition_for(posting_id, kafka.partitions), state)
        record.produce(producer)
    producer.produce(topic, key=b"linkedin/garbage", value=b"not avro", partition=0)
    assert producer.flush(10) == 0


def restored() -> float:
    return REGISTRY.get_sample_value("jobpost_state_restored_records_total", {"store": "linkedin"}) or 0.0


def replayed() -> float:
    labels = {"destination": "linkedin", "outcome": "replayed"}
    return REGISTRY.get_sample_value("jobpost_deliveries_total", labels) or 0.0


def rebuilds(reason: str) -> float:
    return REGISTRY.get_sample_value("jobpost_state_rebuilds_total", {"reason": reason}) or 0.0


def ends(kafka, topic: str) -> list[int]:
    probe = KafkaClients(kafka).probe(f"probe-{uuid.uuid4().hex}")
    try:
        return [
            probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
            for p in range(kafka.partitions)
        ]
    finally:
        probe.close()


def stores(kafka, topics, state_dir: Path) -> Stores:
    """LinkedIn's stores, as the runner keeps them (open them only while no runner does)."""
    return Stores(StateSettings(dir=state_dir), kafka, "linkedin", topics.deliveries)


def checkpoints(kafka, topics, state_dir: Path) -> list[int]:
    linkedin = stores(kafka, topics, state_dir)
    try:
        return [linkedin.get(partition).checkpoint for partition in range(kafka.partitions)]
    finally:
        linkedin.close()


def states_of(kafka, topics, posting_id: str) -> list[DeliveryState]:
    """What jobpost.deliveries says about the posting at LinkedIn, in order."""
    found: list[DeliveryState] = []

    def take(message) -> None:
        destination, key, state = records.delivery_state(message)
        if (destination, key) == (Destination.LINKEDIN, posting_id) and state is not None:
            found.append(state)

    replay(kafka, topics.deliveries, [partition_for(posting_id, kafka.partitions)], take)
    return found


def last_state(kafka, topics, posting_id: str) -> DeliveryState:
    return states_of(kafka, topics, posting_id)[-1]


def settings_for(kafka, sandbox, state_dir: Path, group: str) -> ConsumerSettings:
    return ConsumerSettings(
        kafka=kafka,
        state=StateSettings(dir=state_dir),
        destination=Destination.LINKEDIN,
        group_id=group,
        commit_interval_s=0.2,
        linkedin=LinkedInSettings(base_url=f"{sandbox.url}/linkedin", timeout_s=1),
        retry=RetrySettings(first_wait_s=0.2, max_wait_s=0.5, max_attempts=100, max_elapsed_s=600),
    )


async def until(check: Callable[[], object], timeout_s: float, what: str) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if result := check():
            return result
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def running(settings: ConsumerSettings, scenario: Callable[[DeliveryRunner], Awaitable[None]]) -> None:
    async with client_session(settings) as client:
        runner = DeliveryRunner(settings, destination_for(settings, client))
        task = asyncio.create_task(runner.run())
        try:
            await scenario(runner)
        finally:
            runner.stop()
            await asyncio.wait_for(task, 30)


def first_run(kafka, topics, sandbox, state_dir: Path, unique: str) -> tuple[list[str], str]:
    """A runner delivers 20 postings (10 of them twice) while one posting keeps failing."""
    postings = [f"p{n}" for n in range(20)]
    stuck = "stuck"
    sandbox.faults("linkedin", "error", posting_ids=[stuck])
    write_postings(kafka, topics.postings, [*postings, stuck])
    write_postings(kafka, topics.postings, postings[:10], version=1)

    async def scenario(runner: DeliveryRunner) -> None:
        for n, posting_id in enumerate(postings):
            wanted = [0, 1] if n < 10 else [0]
            await until(
                lambda: (sandbox.posting("linkedin", posting_id) or {}).get("versions") == wanted,
                60,
                posting_id,
            )
            await until(
                lambda: (s := runner.states.get(posting_id)) and s.delivered_version == wanted[-1],
                30,
                "state",
            )
        await until(lambda: (s := runner.states.get(stuck)) and s.attempts >= 3, 60, "3 attempts")

    asyncio.run(running(settings_for(kafka, sandbox, state_dir, f"{unique}-first"), scenario))
    return postings, stuck


def second_run(kafka, topics, sandbox, state_dir: Path, unique: str, postings: list[str], stuck: str) -> None:
    """A runner of a new group replays every posting record from the start: what the first
    delivered is skipped, the stuck posting resumes its attempts, new postings flow."""
    before = last_state(kafka, topics, stuck)
    requests = {p: sandbox.posting("linkedin", p)["requests"] for p in postings}
    newcomers = [f"new{n}" for n in range(5)]
    write_postings(kafka, topics.postings, newcomers)
    skipped_before = replayed()

    async def scenario(runner: DeliveryRunner) -> None:
        await until(lambda: replayed() - skipped_before == 30, 60, "30 delivered versions skipped")
        resumed = await until(
            lambda: (s := runner.states.get(stuck)) and s.attempts > before.attempts and s,
            60,
            "a resumed attempt",
        )
        assert resumed.first_attempt_at == before.first_attempt_at  # type: ignore[union-attr]
        # The first state the new runner wrote for it goes on from the stored count (the
        # runner may have tried again since: its retries are 0.2-0.5 s apart).
        history = states_of(kafka, topics, stuck)
        after = history[history.index(before) + 1]
        assert (after.attempts, after.first_attempt_at) == (before.attempts + 1, before.first_attempt_at)
        for posting_id in newcomers:
            await until(lambda: sandbox.posting("linkedin", posting_id), 60, posting_id)
        sandbox.faults("linkedin", "none")
        await until(
            lambda: (sandbox.posting("linkedin", stuck) or {}).get("versions") == [0], 30, "the stuck one"
        )
        await until(
            lambda: (s := runner.states.get(stuck)) and s.status == DeliveryStatus.DELIVERED, 30, "recorded"
        )

    asyncio.run(running(settings_for(kafka, sandbox, state_dir, f"{unique}-second"), scenario))
    for n, posting_id in enumerate(postings):
        seen = sandbox.posting("linkedin", posting_id)
        assert seen["versions"] == ([0, 1] if n < 10 else [0])
        assert seen["requests"] == requests[posting_id], posting_id  # replayed, never sent again


def test_a_restart_reads_only_the_tail_and_skips_what_was_delivered(kafka, topics, sandbox, unique, tmp_path):
    postings, stuck = first_run(kafka, topics, sandbox, tmp_path, unique)
    assert sum(ends(kafka, topics.deliveries)) >= 33  # 30 deliveries, 3+ attempts of the stuck one

    write_other_destination(kafka, topics.deliveries, 7)
    after = zip(ends(kafka, topics.deliveries), checkpoints(kafka, topics, tmp_path), strict=True)
    tail = sum(end - checkpoint for end, checkpoint in after)
    assert 7 <= tail <= 8  # what others wrote since, and the stuck one's last state if it was cut short
    read_before = restored()

    second_run(kafka, topics, sandbox, tmp_path, unique, postings, stuck)

    assert restored() - read_before == tail


def test_a_store_it_cannot_trust_is_rebuilt_and_nothing_is_sent_twice(
    kafka, topics, sandbox, unique, tmp_path
):
    postings, stuck = first_run(kafka, topics, sandbox, tmp_path, unique)
    linkedin = stores(kafka, topics, tmp_path)
    paths = [linkedin.path(p) for p in range(kafka.partitions)]
    for sst in paths[0].glob("*"):  # unreadable: every file cut short
        if sst.is_file() and sst.stat().st_size > 0:
            sst.write_bytes(sst.read_bytes()[: sst.stat().st_size // 2])
    foreign = PartitionStore(paths[1], "another-cluster/another-topic")  # from another source
    foreign.write([(stuck.encode(), b"junk")], checkpoint=1)
    foreign.close()
    ahead = PartitionStore(paths[2], linkedin.identity)  # ahead of the log
    ahead.write([], checkpoint=10_000)
    ahead.close()
    counts = {reason: rebuilds(reason) for reason in ("unreadable", "derived", "checkpoint")}
    read_before = restored()
    length = sum(ends(kafka, topics.deliveries))

    second_run(kafka, topics, sandbox, tmp_path, unique, postings, stuck)

    assert rebuilds("unreadable") > counts["unreadable"]
    assert rebuilds("derived") > counts["derived"]
    assert rebuilds("checkpoint") > counts["checkpoint"]
    assert restored() - read_before == length  # every partition read again from the start
