"""Erasure (docs/decisions/0015-erasure.md): a deleted posting's text is gone from every place
we control within the stated bound — 31 days, here 31 days of 3 seconds
(`JOBPOST_KAFKA_ERASURE_DAY_MS`: only the topic times that bound erasure are shortened).

A posting carries a marker in its text; LinkedIn refuses its update, which is dead-lettered
and redriven; then it is deleted. Once the boards closed it, no snapshot taken then holds the
marker, nor, within the stores' erasure interval (1 s here), any local store file of the API
or the board consumers; once the bound has passed, no
record of any topic of this system holds it (every partition read from its start to its end,
keys, values and headers, uncommitted records included)."""

from __future__ import annotations

import contextlib
import io
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource

from jobpost_dev.processes import running
from runtime.dead_letters import read_dead_letters
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.outbox import deliver_all
from runtime.redrive import requests_for
from runtime.topics import delete_topics, ensure_topics
from schemas.enums import Destination
from schemas.topics import Component, Topics, erasure_bound_ms
from tests import postings, servers
from tests.integration.consumers.conftest import TOKEN
from tests.processes import SplitApi, wait_until

# serial: the broker's log cleaner within a bound, which other tests' compacted topics load
pytestmark = pytest.mark.serial

DAY_MS = 3_000
# What the broker adds to the topics' times besides its retention check (read from the broker:
# 1 s on a stack started by this release, Kafka's default 5 minutes on one started before):
# its cleaner's pause, a segment closing on the partition's next write (written between two
# reads of every topic here), a compaction's own time.
BROKER_MARGIN_S = 30


def retention_check_s(kafka: KafkaSettings) -> float:
    """How often the broker looks for segments past their retention."""
    admin = KafkaClients(kafka).admin()
    broker = min(admin.list_topics(timeout=10).brokers)
    resource = ConfigResource(ConfigResource.Type.BROKER, str(broker))
    config = admin.describe_configs([resource])[resource].result(15)
    return int(config["log.retention.check.interval.ms"].value) / 1000


@pytest.fixture
def kafka(kafka_bootstrap: str, unique: str) -> Iterator[KafkaSettings]:
    """This test's topics, their erasure times counted in days of DAY_MS."""
    settings = servers.one_broker(kafka_bootstrap, unique, partitions=3).model_copy(
        update={"erasure_day_ms": DAY_MS}
    )
    ensure_topics(settings)
    yield settings
    with contextlib.suppress(KafkaException):
        delete_topics(settings)


def records_holding(kafka: KafkaSettings, marker: bytes) -> list[str]:
    """Where the marker lies in the system's topics: `topic[partition]@offset`, each record
    read raw from the partition's start to its end (aborted ones too). Every partition is read
    at once, so a whole read takes a second or two and the fillers keep coming."""
    admin = KafkaClients(kafka).admin()
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(f"{kafka.topic_prefix}.")]
    assert len(names) >= len(Topics(kafka.topic_prefix).specs(3, 1))
    reader = Consumer(
        {
            **kafka.client_config(),
            "group.id": f"{kafka.topic_prefix}-erasure-check-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_uncommitted",
            "enable.auto.commit": False,
            "enable.partition.eof": True,  # past a transaction's marker, the last offset is no record
            # A start that retention moved while this read: on from where the partition begins now.
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 20,  # a partition read to its end says so at once
        }
    )
    try:
        ends: dict[tuple[str, int], int] = {}
        starts = []
        for name in names:
            for partition in admin.list_topics(name, timeout=10).topics[name].partitions:
                start, end = reader.get_watermark_offsets(
                    TopicPartition(name, partition), timeout=10, cached=False
                )
                if start < end:
                    ends[(name, partition)] = end
                    starts.append(TopicPartition(name, partition, start))
        return _holding(reader, starts, ends, marker)
    finally:
        reader.close()


def _holding(
    reader: Consumer, starts: list[TopicPartition], ends: dict[tuple[str, int], int], marker: bytes
) -> list[str]:
    """Read each partition from its start to its end (`ends`: the offset after its last record)."""
    reader.assign(starts)
    found, deadline = [], time.monotonic() + 60
    while ends:
        assert time.monotonic() < deadline, f"not read to their ends in 60 s: {sorted(ends)}"
        message = reader.poll(0.5)
        if message is None:
            continue
        place = (message.topic(), message.partition())
        if message.error() is not None:
            if message.error().code() == KafkaError._PARTITION_EOF:
                ends.pop(place, None)
            continue
        headers = b"".join(k.encode() + (v or b"") for k, v in message.headers() or [])
        if marker in (message.key() or b"") + (message.value() or b"") + headers:
            found.append(f"{place[0]}[{place[1]}]@{message.offset()}")
        if place in ends and message.offset() >= ends[place] - 1:
            del ends[place]
    return found


def files_holding(folders: list[Path], marker: bytes) -> list[str]:
    return sorted(
        str(p) for folder in folders for p in folder.rglob("*") if p.is_file() and marker in p.read_bytes()
    )


def snapshot_members_holding(api: SplitApi, marker: bytes) -> tuple[int, list[str]]:
    """The API's snapshot (its stores as a new replica would copy them): how many files it
    has, and which hold the marker."""
    answer = httpx.get(f"{api.internal_url}/ops/snapshot", headers=api.headers, timeout=60)
    assert answer.status_code == 200, answer.text
    files, holding = 0, []
    with tarfile.open(fileobj=io.BytesIO(answer.content), mode="r:") as tar:
        for member in tar:
            content = tar.extractfile(member)
            if content is None:
                continue
            files += 1
            if marker in content.read():
                holding.append(member.name)
    return files, holding


def test_a_deleted_posting_leaves_no_text_in_any_topic_store_or_snapshot_within_the_bound(
    kafka, elasticsearch_url, sandbox, start_consumer, topics
):
    marker = f"erasure-marker-{uuid.uuid4().hex}"
    quickly = {"JOBPOST_STATE_ERASE_AFTER_S": "1"}  # the stores compact what was erased within 1 s
    consumers = [start_consumer("linkedin", **quickly), start_consumer("indeed", **quickly)]
    with running(SplitApi(kafka, TOKEN, elasticsearch_url, **quickly)) as api:
        created = api.client.create(title=f"Harbour pilot {marker}")
        posting = created["id"]
        wait_until(lambda: sandbox.applied("linkedin", posting) == [0], 30, "version 0 at LinkedIn")

        # LinkedIn refuses the update: its dead letter holds the marker; the redrive request
        # names the letter and carries none of it.
        sandbox.faults("linkedin", "reject", posting_ids=[posting])
        description = f"{postings.body()['description']} Tides and {marker}."
        api.client.replace(posting, title="Harbour pilot", description=description)
        letters_topic = topics.dlq(Component.LINKEDIN)
        wait_until(lambda: read_dead_letters(kafka, letters_topic), 30, "version 1 dead-lettered")
        sandbox.faults("linkedin", "none")
        (request,) = requests_for(read_dead_letters(kafka, letters_topic), "ops", kafka.partitions)
        assert marker.encode() not in request.record(topics, Destination.LINKEDIN).value
        assert deliver_all(
            KafkaClients(kafka).producer(), [request.record(topics, Destination.LINKEDIN)], lambda: False
        )
        wait_until(lambda: sandbox.applied("linkedin", posting) == [0, 1], 30, "version 1 redriven")

        api.client.delete(posting)
        deleted_at = time.monotonic()
        for board in ("linkedin", "indeed"):
            wait_until(
                lambda b=board: sandbox.posting(b, posting)["status"] == "closed", 30, f"{board} closed"
            )
        api.client.get(posting, strong=True, expect=410)
        wait_until(
            lambda: all(
                api.client.deliveries(posting)["destinations"].get(b, {}).get("status") == "closed"
                for b in ("linkedin", "indeed")
            ),
            30,
            "the API's view of the deliveries to say closed",
        )

        # Now: no snapshot holds it; within the stores' erasure interval, no store file of the
        # API or the board consumers.
        state = [api.state_dir, *(c.state_dir for c in consumers)]
        marker_bytes = marker.encode()
        files, holding = snapshot_members_holding(api, marker_bytes)
        assert files > 0 and holding == []
        wait_until(lambda: files_holding(state, marker_bytes) == [], 15, "no store file to hold the marker")

        # Within the bound: no record of any topic. Other postings keep every partition
        # written, as a live system does, so segments close.
        bound_s = erasure_bound_ms(DAY_MS) / 1000 + retention_check_s(kafka) + BROKER_MARGIN_S
        left: list[str] = ["not read yet"]
        held: dict[str, float] = {}  # topic -> the last time it was seen holding the marker
        while left and time.monotonic() - deleted_at < bound_s:
            for n in range(3):
                api.client.create(title=f"Filler {n}")
            left = records_holding(kafka, marker_bytes)  # a read of every topic: a few seconds
            held.update({place.split("[")[0]: time.monotonic() - deleted_at for place in left})
        took = time.monotonic() - deleted_at
        assert left == [], (
            f"the marker is still in {left} {took:.0f} s after the delete (bound {bound_s:.0f} s)"
        )
        print(f"erasure: gone from every topic {took:.1f} s after the delete (bound {bound_s:.0f} s);")
        print(f"erasure: last seen (s after the delete): { {t: round(s, 1) for t, s in held.items()} }")
        assert files_holding(state, marker_bytes) == []
