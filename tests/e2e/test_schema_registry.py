"""Registry mode end to end: the system as `make run` starts it, with
JOBPOST_SCHEMA_REGISTRY_URL naming a real Apicurio Registry, read and written by clients we
did not write (confluent-kafka's AvroSerializer and AvroDeserializer)."""

import json
import time

import httpx
from confluent_kafka import Message
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas import codec
from schemas.subjects import subject, value_codecs
from schemas.topics import Topics
from tests.e2e.conftest import started_system
from tests.e2e.test_journey import progress, titles
from tests.processes import Process, kafka_env, wait_until
from tests.servers import registry_client


def every_record(kafka: KafkaSettings, topic: str) -> list[Message]:
    """Every record of the topic, on every partition it has (jobpost.webhooks has one)."""
    found: list[Message] = []
    partitions = KafkaClients(kafka).admin().list_topics(topic, timeout=10).topics[topic].partitions
    replay(kafka, topic, sorted(partitions), found.append)
    return found


THEIR_DESCRIPTION = (
    "Written by AvroSerializer with the schema of the release before listable postings: a free-text "
    "location, none of the structured fields. Our readers resolve it to today's shape."
)


def a_posting_written_by_avro_serializer(registry_url: str, kafka: KafkaSettings, topic: str) -> str:
    """A CREATED version of a new posting, encoded by confluent-kafka with our schema file of
    the release before (v3: an older producer's record, which every reader still takes)."""
    serialize = AvroSerializer(
        registry_client(registry_url), (codec.AVRO_DIR / "posting_update.v3.avsc").read_text()
    )
    now = int(time.time() * 1000)
    posting_id = "written-by-avro-serializer"
    fields = {
        "posting_id": posting_id,
        "version": 0,
        "op": "CREATED",
        "idempotency_key": f"{posting_id}:0",
        "request_id": "avro-serializer",
        "request_fingerprint": "",
        "employer": "default",
        "actor": "avro-serializer",
        "posting": {
            "title": "Kafka Connect Engineer",
            "description": THEIR_DESCRIPTION,
            "notes": "",
            "location": "Berlin, Germany",
            "apply_url": "https://careers.example.com/jobs/kafka-connect-engineer",
        },
        "last_update_time_millis": now,
        "accepted_at": now,
    }
    producer = KafkaClients(kafka).producer()
    producer.produce(topic, serialize(fields, SerializationContext(topic, MessageField.VALUE)), posting_id)
    assert producer.flush(10) == 0
    return posting_id


def test_registry_mode_from_create_to_both_boards_and_search(
    kafka, elasticsearch_url, unique, schema_registry_url
):
    topics = Topics(kafka.topic_prefix)
    with started_system(
        kafka, elasticsearch_url, unique, JOBPOST_SCHEMA_REGISTRY_URL=schema_registry_url
    ) as system:
        api = system.client
        posting_id = api.create(title="Schema Engineer")["id"]
        for title in ("Senior Schema Engineer", "Staff Schema Engineer"):
            api.replace(posting_id, title=title)
        for board in ("linkedin", "indeed"):
            wait_until(lambda: system.board(board, posting_id)["versions"] == [0, 1, 2], 60, f"{board} at v2")
        wait_until(lambda: titles(api, "staff") == [(posting_id, 2)], 60, "search to find version 2")
        done = lambda: all(d["delivered_version"] == 2 for d in progress(api, posting_id).values())  # noqa: E731
        wait_until(done, 30, "every destination to report version 2")

        # Our readers accept a record confluent-kafka wrote: the view, both boards, search.
        theirs = a_posting_written_by_avro_serializer(schema_registry_url, kafka, topics.postings)
        for board in ("linkedin", "indeed"):
            wait_until(lambda: system.board(board, theirs)["versions"] == [0], 60, f"{board} to apply theirs")
        wait_until(lambda: titles(api, "connect") == [(theirs, 0)], 60, "search to find theirs")
        read = api.get(theirs, strong=True)
        assert (read["description"], read["location"], read["locations"]) == (
            THEIR_DESCRIPTION,
            "Berlin, Germany",
            [],
        )
        # Every component registered the schemas at start, all at once, and none had to be restarted.
        assert "exited with" not in system.process.log_tail(), system.process.log_tail()

    # Every record every producer wrote is in the registry's format, and AvroDeserializer
    # (asking the registry for each id) reads it.
    deserialize = AvroDeserializer(registry_client(schema_registry_url))
    postings = [m for m in every_record(kafka, topics.postings) if m.value() is not None]
    assert len(postings) == 4  # three versions of ours, one of theirs
    for topic in value_codecs(topics):
        for message in every_record(kafka, topic):
            if message.value() is None:
                continue
            assert message.value()[:1] == b"\x00", f"{topic} holds a record not in the registry format"
            value = deserialize(message.value(), SerializationContext(topic, MessageField.VALUE))
            assert isinstance(value, dict) and value, topic
            if topic == topics.postings:
                assert value["posting_id"] == message.key().decode()
    versions = sorted(
        deserialize(m.value(), SerializationContext(topics.postings, MessageField.VALUE))["version"]
        for m in postings
        if m.key().decode() == posting_id
    )
    assert versions == [0, 1, 2]


def test_a_schema_the_registry_refuses_stops_a_component_at_start(kafka, schema_registry_url):
    topics = Topics(kafka.topic_prefix)
    # The subject holds a PostingUpdate whose version is text: this release's cannot read it.
    theirs = json.loads(codec.posting_updates().avro.text)
    next(f for f in theirs["fields"] if f["name"] == "version")["type"] = "string"
    with httpx.Client(base_url=schema_registry_url, timeout=10) as registry:
        answer = registry.post(
            f"/subjects/{subject(topics.postings)}/versions", json={"schema": json.dumps(theirs)}
        )
        assert answer.status_code == 200, answer.text

    env = {**kafka_env(kafka), "JOBPOST_SCHEMA_REGISTRY_URL": schema_registry_url, "JOBPOST_API_TOKENS": "t"}
    for command in (["api"], ["consumer", "linkedin"]):
        process = Process(f"refused-{command[-1]}", command, env)
        try:
            assert process.popen.wait(60) == 2, process.log_tail()
        finally:
            process.stop()
        log = process.log_tail()
        assert f"refused this release's schema for {subject(topics.postings)}" in log, log
        assert "STRING" in log.upper() and "LONG" in log.upper(), log  # the registry's reason
        assert "Traceback" not in log, log
    assert [m for t in value_codecs(topics) for m in every_record(kafka, t)] == []  # nothing written
