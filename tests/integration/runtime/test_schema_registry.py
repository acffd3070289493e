"""The registry wire format against a real Apicurio Registry and a real Kafka: what a
process registers at start, what the registry refuses, and that confluent-kafka's own
serializers and ours read each other's records."""

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from confluent_kafka import Message
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from runtime import records
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from runtime.schema_registry import SchemaRegistryError, SchemaRegistrySettings, use_schema_registry
from schemas import codec, framing
from schemas.model import Op, Posting, PostingUpdate
from schemas.subjects import subject, value_codecs
from schemas.topics import Topics
from tests.servers import registry_client


@pytest.fixture(autouse=True)
def single_object_afterwards() -> Iterator[None]:
    """The framing is the process's: give it back as the other tests expect it."""
    yield
    framing.use_registry(None)


@pytest.fixture
def registry(schema_registry_url: str) -> httpx.Client:
    with httpx.Client(base_url=schema_registry_url, timeout=10) as client:
        yield client


def settings(url: str, **overrides: object) -> SchemaRegistrySettings:
    return SchemaRegistrySettings(url=url, **overrides)


def an_update(posting_id: str = "p-1", version: int = 0) -> PostingUpdate:
    return PostingUpdate(
        posting_id=posting_id,
        version=version,
        op=Op.CREATED,
        idempotency_key=f"{posting_id}:{version}",
        request_id="req-1",
        request_fingerprint="",
        posting=Posting("Data Engineer", "Streaming pipelines", "remote", "Berlin", None),
        last_update_time_millis=1_700_000_000_000,
        accepted_at=1_700_000_000_000,
        employer="acme",
        actor="ats-acme",
    )


def produced(kafka: KafkaSettings, topic: str, key: str, value: bytes) -> None:
    producer = KafkaClients(kafka).producer()
    producer.produce(topic, value, key)
    assert producer.flush(10) == 0


def read_back(kafka: KafkaSettings, topic: str) -> list[Message]:
    found: list[Message] = []
    replay(kafka, topic, range(kafka.partitions), found.append)
    return found


def test_every_topic_value_is_registered_under_its_subject_backward_transitive(
    kafka, topics, schema_registry_url, registry
):
    chosen = use_schema_registry(settings(schema_registry_url), topics)
    assert chosen is not None and chosen.write
    ours = set(registry.get("/subjects").json()) & {subject(t) for t in value_codecs(topics)}
    assert ours == {subject(t) for t in value_codecs(topics)}
    for topic, avro in value_codecs(topics).items():
        level = registry.get(f"/config/{subject(topic)}").json()["compatibilityLevel"]
        assert level == "BACKWARD_TRANSITIVE", topic
        latest = registry.get(f"/subjects/{subject(topic)}/versions/latest").json()
        assert chosen.ids[avro.fingerprint] == latest["id"]
        assert json.loads(latest["schema"]) == json.loads(avro.text)


def test_a_restarted_process_gets_the_same_ids_and_adds_no_version(
    kafka, topics, schema_registry_url, registry
):
    first = use_schema_registry(settings(schema_registry_url), topics)
    again = use_schema_registry(settings(schema_registry_url), topics)
    assert first is not None and again is not None and again.ids == first.ids
    assert registry.get(f"/subjects/{subject(topics.postings)}/versions").json() == [1]


def test_an_incompatible_schema_is_refused_at_start_and_nothing_switches(
    kafka, topics, schema_registry_url, registry
):
    # What the subject holds: a PostingUpdate whose version is text. This release's (a
    # long) cannot read such records, so BACKWARD_TRANSITIVE refuses it.
    theirs = json.loads(codec.posting_updates().avro.text)
    next(f for f in theirs["fields"] if f["name"] == "version")["type"] = "string"
    registered = registry.post(
        f"/subjects/{subject(topics.postings)}/versions", json={"schema": json.dumps(theirs)}
    )
    assert registered.status_code == 200, registered.text

    with pytest.raises(SchemaRegistryError) as refused:
        use_schema_registry(settings(schema_registry_url), topics)
    message = str(refused.value)
    assert subject(topics.postings) in message and "incompatible" in message
    assert "STRING" in message.upper() and "LONG" in message.upper()  # the registry's reason
    assert framing.registry() is None
    assert codec.posting_updates().encode(an_update())[:2] == b"\xc3\x01"


def test_a_weaker_level_is_raised_and_a_stricter_one_kept(kafka, topics, schema_registry_url, registry):
    use_schema_registry(settings(schema_registry_url), topics)
    postings, commands = subject(topics.postings), subject(topics.commands)
    assert registry.put(f"/config/{postings}", json={"compatibility": "NONE"}).status_code == 200
    assert registry.put(f"/config/{commands}", json={"compatibility": "FULL_TRANSITIVE"}).status_code == 200
    use_schema_registry(settings(schema_registry_url), topics)
    assert registry.get(f"/config/{postings}").json()["compatibilityLevel"] == "BACKWARD_TRANSITIVE"
    assert registry.get(f"/config/{commands}").json()["compatibilityLevel"] == "FULL_TRANSITIVE"


def test_confluent_kafkas_avro_deserializer_reads_what_we_write(kafka, topics, schema_registry_url):
    use_schema_registry(settings(schema_registry_url), topics)
    update = an_update()
    produced(kafka, topics.postings, update.posting_id, codec.posting_updates().encode(update))

    deserialize = AvroDeserializer(registry_client(schema_registry_url))
    (message,) = read_back(kafka, topics.postings)
    value = deserialize(message.value(), SerializationContext(topics.postings, MessageField.VALUE))
    assert value == {**update.to_avro(), "op": "CREATED"}


def test_our_readers_accept_what_avro_serializer_writes(kafka, topics, schema_registry_url):
    use_schema_registry(settings(schema_registry_url), topics)
    serialize = AvroSerializer(
        registry_client(schema_registry_url),
        (codec.AVRO_DIR / "posting_update.v3.avsc").read_text(),
    )
    update = an_update("p-theirs", 4)
    fields = {**update.to_avro(), "op": "CREATED"}
    value = serialize(fields, SerializationContext(topics.postings, MessageField.VALUE))
    assert value is not None and value[:1] == b"\x00"
    produced(kafka, topics.postings, update.posting_id, value)

    (message,) = read_back(kafka, topics.postings)
    assert records.posting_update(message) == (update.posting_id, update)


def test_the_migrations_first_step_reads_the_registry_format_and_writes_the_old_one(
    kafka, topics, schema_registry_url
):
    use_schema_registry(settings(schema_registry_url), topics)
    registry_format = codec.posting_updates().encode(an_update())
    use_schema_registry(settings(schema_registry_url, write_format="single-object"), topics)
    old_format = codec.posting_updates().encode(an_update())
    assert (registry_format[:1], old_format[:2]) == (b"\x00", b"\xc3\x01")
    assert codec.posting_updates().decode(registry_format) == codec.posting_updates().decode(old_format)


def test_another_systems_subjects_are_its_own(kafka, schema_registry_url, registry):
    mine, theirs = Topics(f"{kafka.topic_prefix}-a"), Topics(f"{kafka.topic_prefix}-b")
    use_schema_registry(settings(schema_registry_url), mine)
    assert subject(theirs.postings) not in registry.get("/subjects").json()


def test_components_starting_together_all_register(kafka, topics, schema_registry_url, registry):
    # make run starts every component at once: they race to create each subject and set
    # its level (the race once made three of four exit at start).
    def start(_: int) -> framing.Registry | None:
        return use_schema_registry(settings(schema_registry_url), topics)

    with ThreadPoolExecutor(max_workers=4) as pool:
        chosen = list(pool.map(start, range(4)))
    assert all(c is not None and c.ids == chosen[0].ids for c in chosen)
    for topic in value_codecs(topics):
        assert registry.get(f"/config/{subject(topic)}").json()["compatibilityLevel"] == "BACKWARD_TRANSITIVE"
