"""Every write ends as it was answered, with the sequencer's host five minutes ahead of the
API's or five minutes behind: 200/201 applied, 503 never applied, 504 said so (and, here,
never applied either: its sequencer came back after the command's budget)."""

from __future__ import annotations

import os
import signal
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from runtime.kafka import KafkaSettings, end_offset
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas import codec
from schemas.model import Outcome
from schemas.partitioning import partition_for
from tests import postings
from tests.processes import ApiProcess, Process, kafka_env, read_postings, wait_until

TOKEN = "deadline-token"
BUDGET_S = 3.0  # JOBPOST_API_WRITE_TIMEOUT_S 6 less JOBPOST_API_VERDICT_MARGIN_S 3
SKEWED_CLOCK = str(Path(__file__).resolve().parents[2] / "skewed_clock")


def sequencer(kafka: KafkaSettings, skew_s: float) -> Process:
    """`jobpost sequencer` on a host whose wall clock is `skew_s` off."""
    path = os.pathsep.join(p for p in (SKEWED_CLOCK, os.environ.get("PYTHONPATH")) if p)
    env = {**kafka_env(kafka), "PYTHONPATH": path, "JOBPOST_TEST_CLOCK_SKEW_S": str(skew_s)}
    return Process(f"sequencer-skewed-{skew_s:+.0f}", ["sequencer"], env)


class BrokerTime:
    """The brokers' clock, read the way the sequencer reads it: the append time of a
    record just acknowledged (a topic of the test's own with LogAppendTime)."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self.topic = f"{kafka.topic_prefix}.test-clock"
        new = NewTopic(self.topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})
        admin = AdminClient(kafka.client_config())
        admin.create_topics([new])[self.topic].result(30)
        self.producer = KafkaClients(kafka).producer()

    def now_millis(self) -> int:
        told: list[int] = []
        self.producer.produce(self.topic, b"tick", on_delivery=lambda _e, m: told.append(m.timestamp()[1]))
        self.producer.flush(10)
        return told[0]


def appended_at(kafka: KafkaSettings, posting_id: str, after: int) -> int | None:
    """The append time of the posting's first command written at or after offset `after`."""
    topic = f"{kafka.topic_prefix}.commands"
    partition = partition_for(posting_id, kafka.partitions)
    consumer = KafkaClients(kafka).probe(f"probe-{uuid.uuid4().hex}")
    try:
        if end_offset(consumer, topic, partition) <= after:
            return None
        consumer.assign([TopicPartition(topic, partition, after)])
        message = consumer.poll(10)
        return None if message is None or message.error() else message.timestamp()[1]
    finally:
        consumer.close()


def expired_replies(kafka: KafkaSettings, posting_id: str) -> int:
    found: list[Outcome] = []

    def take(message):
        reply = codec.replies().decode(message.value())
        if reply.posting_id == posting_id:
            found.append(reply.outcome)

    replay(kafka, f"{kafka.topic_prefix}.replies", range(kafka.partitions), take)
    return found.count(Outcome.EXPIRED)


@pytest.mark.parametrize("skew_s", [300.0, -300.0], ids=["sequencer-5-min-ahead", "sequencer-5-min-behind"])
def test_every_write_ends_as_answered_whatever_the_hosts_clocks_say(kafka, topics, elasticsearch_url, skew_s):
    clock = BrokerTime(kafka)
    api = ApiProcess(
        kafka,
        TOKEN,
        elasticsearch_url,
        JOBPOST_API_EMBEDDED_SEQUENCER="false",
        JOBPOST_API_WRITE_TIMEOUT_S="6",
        JOBPOST_API_VERDICT_MARGIN_S="3",
    )
    member = sequencer(kafka, skew_s)
    answered: dict[str, list[int]] = {}  # title -> the status of each attempt
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=30)

    def put(posting_id: str, title: str) -> httpx.Response:
        body = postings.body(1, title=title, notes="")
        response = http.put(f"/postings/{posting_id}", json=body)
        answered.setdefault(title, []).append(response.status_code)
        return response

    def accepted(send) -> httpx.Response:
        """Send until accepted: while the member still restores a partition (readiness counts
        the group's assignment), a write may wait past its budget; 503 says it never applied."""
        response = wait_until(lambda: (r := send()).status_code in (200, 201) and r, 60, "a write accepted")
        # (The write sent while no sequencer runs is answered 504 on purpose, below.)
        others = [s for title, statuses in answered.items() if title != "no sequencer" for s in statuses]
        assert all(status in (200, 201, 503) for status in others), answered
        return response

    def create() -> httpx.Response:
        created = http.post("/postings", json=postings.body(1, title="v0", notes=""))
        answered.setdefault("v0", []).append(created.status_code)
        return created

    try:
        api.wait_ready()
        posting_id = accepted(create).json()["id"]
        assert [accepted(lambda n=n: put(posting_id, f"v{n}")).json()["version"] for n in (1, 2, 3)] == [
            1,
            2,
            3,
        ]

        # 503: the sequencer is paused until the broker's clock has passed the command's
        # deadline; it then reads the command, and answers EXPIRED while the API still waits.
        commands_end = end_offset_of(kafka, posting_id)
        os.kill(member.popen.pid, signal.SIGSTOP)
        try:
            with ThreadPoolExecutor(1) as pool:
                pending = pool.submit(put, posting_id, "paused past its budget")
                appended = wait_until(lambda: appended_at(kafka, posting_id, commands_end), 10, "the command")
                wait_until(
                    lambda: clock.now_millis() > appended + BUDGET_S * 1000 + 300, 10, "its deadline to pass"
                )
                os.kill(member.popen.pid, signal.SIGCONT)
                refused = pending.result(30)
        finally:
            os.kill(member.popen.pid, signal.SIGCONT)
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == "1"

        # 504: no sequencer at all; a new one (a process that knows no time yet) comes back
        # after the command's budget and must not apply it.
        member.stop()
        unknown = put(posting_id, "no sequencer")
        assert unknown.status_code == 504, unknown.text
        assert unknown.json()["type"] == "https://jobpost.dev/problems/outcome-unknown"
        assert int(unknown.headers["Retry-After"]) >= 1
        member = sequencer(kafka, skew_s)
        api.wait_ready()
        assert accepted(lambda: put(posting_id, "v4")).json()["version"] == 4
    finally:
        http.close()
        member.stop()
        api.stop()

    log = [
        (u.version, u.posting.title)
        for k, _, u in read_postings(kafka, topics.postings)
        if k == posting_id and u
    ]
    assert log == [(n, f"v{n}") for n in range(5)]  # exactly the writes answered 200/201
    assert {t for t, statuses in answered.items() if {200, 201} & set(statuses)} == {
        f"v{n}" for n in range(5)
    }
    # Every 503 of this posting (a create's retry makes another posting) and the 504.
    not_applied = sum(statuses.count(503) for title, statuses in answered.items() if title != "v0")
    assert expired_replies(kafka, posting_id) == not_applied + 1


def end_offset_of(kafka: KafkaSettings, posting_id: str) -> int:
    consumer = KafkaClients(kafka).probe(f"probe-{uuid.uuid4().hex}")
    try:
        return end_offset(
            consumer, f"{kafka.topic_prefix}.commands", partition_for(posting_id, kafka.partitions)
        )
    finally:
        consumer.close()
