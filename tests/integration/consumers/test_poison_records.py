"""Records nobody can use, written straight to every topic, stop nothing: each reader
dead-letters them (a consumer group) or counts and skips them (a view), and goes on."""

import re

import httpx

from runtime.kafka_clients import KafkaClients
from schemas.topics import Component
from tests import postings
from tests.integration.consumers.test_delivery import applied, create, replace
from tests.processes import Process, kafka_env, wait_until

GARBAGE = [
    (b"key-1", b"not avro at all"),  # bad magic
    (b"key-2", b"\xc3\x01" + b"\x00" * 8 + b"junk"),  # unknown writer schema
    (b"\xff\xfe not utf-8", None),  # a key no reader can take as text
]


def write_garbage(kafka, topic: str, null_value_too: bool) -> int:
    producer = KafkaClients(kafka).producer()
    written = 0
    for partition in range(kafka.partitions):
        for key, value in [*GARBAGE, *([(b"key-3", None)] if null_value_too else [])]:
            producer.produce(topic, key=key, value=value, partition=partition)
            written += 1
    assert producer.flush(10) == 0
    return written


def letters(kafka, topic: str) -> int:
    from tests.integration.consumers.conftest import dead_letters

    return len(dead_letters(kafka, topic))


def poison_count(metrics: str, reader: str) -> float:
    match = re.search(rf'jobpost_poison_records_total\{{reader="{reader}"\}} (\S+)', metrics)
    return float(match.group(1)) if match else 0.0


def test_garbage_on_every_topic_stops_nothing(
    kafka, topics, elasticsearch_url, unique, sandbox, start_consumer, api
):
    on_postings = write_garbage(kafka, topics.postings, null_value_too=False)
    on_commands = write_garbage(kafka, topics.commands, null_value_too=True)
    write_garbage(kafka, topics.replies, null_value_too=True)
    write_garbage(kafka, topics.deliveries, null_value_too=False)
    start_consumer("linkedin")
    start_consumer("indeed")
    alias = f"{unique}-postings"
    indexer = Process(
        "indexer",
        ["indexer"],
        {
            **kafka_env(kafka),
            "JOBPOST_INDEXER_ELASTICSEARCH_URL": elasticsearch_url,
            "JOBPOST_INDEXER_ALIAS": alias,
        },
    )
    try:
        postings = [create(api, f"After Garbage {n}") for n in range(6)]
        for posting_id in postings[:3]:
            replace(api, posting_id, "After Garbage, v1")

        for board in ("linkedin", "indeed"):
            for n, posting_id in enumerate(postings):
                wanted = [0, 1] if n < 3 else [0]
                wait_until(lambda: applied(sandbox, board, posting_id) == wanted, 60, f"{board} delivery")
        for group in ("linkedin", "indeed", "search-indexer"):
            wait_until(
                lambda: letters(kafka, topics.dlq(Component(group))) == on_postings,
                60,
                f"{group} dead letters",
            )
        assert letters(kafka, topics.dlq(Component("sequencer"))) == on_commands

        def indexed() -> bool:
            response = httpx.get(f"{elasticsearch_url}/{alias}/_count")
            return response.status_code == 200 and response.json()["count"] == len(postings)

        wait_until(indexed, 60, "every posting indexed")
        ready = httpx.get(f"{api.url}/readyz", timeout=5)
        assert ready.status_code == 200, ready.text
        metrics = httpx.get(f"{api.url}/metrics").text
        assert poison_count(metrics, "postings-view") == on_postings
        assert poison_count(metrics, "deliveries-view") >= 3 * kafka.partitions
        assert indexer.popen.poll() is None, indexer.log_tail()
    finally:
        indexer.stop()


def test_a_fresh_api_replica_reads_past_garbage_and_becomes_ready(kafka, topics, elasticsearch_url):
    from tests.processes import running_api

    write_garbage(kafka, topics.postings, null_value_too=False)
    write_garbage(kafka, topics.deliveries, null_value_too=False)
    with running_api(kafka, "token", elasticsearch_url) as api:
        created = httpx.post(
            f"{api.url}/postings", json=postings.body(2, title="Fine"), headers=api.headers, timeout=15
        )
        assert created.status_code == 201
        read = httpx.get(f"{api.url}/postings/{created.json()['id']}?consistency=strong", headers=api.headers)
        assert read.status_code == 200
        assert httpx.get(f"{api.url}/readyz").status_code == 200
