"""The registry wire format beside single-object encoding: what a process writes once it
chose the registry's format at start, and that every reader accepts both."""

import io
import json
from collections.abc import Iterator

import fastavro
import pytest

from schemas import codec, framing
from schemas.codec import SerializationError, UnknownSchemaError
from schemas.framing import Registry, SchemaLookupError
from schemas.subjects import subject, value_codecs
from schemas.topics import Topics
from tests.unit.schemas.test_codec import update

POSTINGS_ID = 41


@pytest.fixture
def registry_texts() -> dict[int, str]:
    """What the fake registry holds: schema id -> schema text."""
    return {POSTINGS_ID: codec.posting_updates().avro.text}


@pytest.fixture
def registry(registry_texts: dict[int, str]) -> Iterator[Registry]:
    def source(schema_id: int) -> str:
        if schema_id not in registry_texts:
            raise UnknownSchemaError(f"no schema id {schema_id}")
        return registry_texts[schema_id]

    chosen = Registry({codec.posting_updates().fingerprint: POSTINGS_ID}, source)
    framing.use_registry(chosen)
    yield chosen
    framing.use_registry(None)


def test_a_process_using_the_registry_writes_00_and_the_schema_id(registry):
    data = codec.posting_updates().encode(update())
    assert data[:5] == b"\x00" + POSTINGS_ID.to_bytes(4, "big")
    assert codec.posting_updates().decode(data) == update()


def test_the_body_is_the_same_in_both_formats(registry):
    registry_format = codec.posting_updates().encode(update())
    framing.use_registry(None)
    single_object = codec.posting_updates().encode(update())
    assert single_object[:2] == b"\xc3\x01"
    assert registry_format[5:] == single_object[10:]


def test_readers_accept_both_formats_whatever_the_process_writes(registry):
    registry_format = codec.posting_updates().encode(update())
    framing.use_registry(Registry(registry.ids, registry.source, write=False))  # migration, step 1
    single_object = codec.posting_updates().encode(update())
    assert single_object[:2] == b"\xc3\x01"
    assert codec.posting_updates().decode(registry_format) == update()
    assert codec.posting_updates().decode(single_object) == update()


def test_a_record_of_an_older_schema_registered_elsewhere_resolves_to_ours(registry, registry_texts):
    older = codec.load_schema("posting_update.v2.avsc")
    registry_texts[7] = json.dumps(older)
    fields = update().to_avro()
    for name in ("employer", "actor"):
        del fields[name]
    for name in ("location", "apply_url"):
        del fields["posting"][name]
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(older), fields)
    written = b"\x00" + (7).to_bytes(4, "big") + body.getvalue()
    decoded = codec.posting_updates().decode(written)
    assert (decoded.posting.title, decoded.employer) == ("Engineer", "default")


def test_an_id_the_registry_does_not_know_is_a_bad_record(registry):
    with pytest.raises(UnknownSchemaError, match="no schema id 99"):
        codec.posting_updates().decode(b"\x00" + (99).to_bytes(4, "big") + b"\x02")


def test_an_id_of_another_record_type_is_a_bad_record(registry, registry_texts):
    registry_texts[8] = codec.replies().avro.text
    with pytest.raises(SerializationError):
        codec.posting_updates().decode(b"\x00" + (8).to_bytes(4, "big") + b"\x02\x04ab")


def test_a_registry_that_cannot_answer_now_is_not_the_records_fault(registry_texts):
    def unavailable(schema_id: int) -> str:
        raise SchemaLookupError("connection refused")

    framing.use_registry(Registry({}, unavailable))
    try:
        with pytest.raises(SchemaLookupError) as raised:
            codec.posting_updates().decode(b"\x00" + (5).to_bytes(4, "big") + b"\x02")
        assert not isinstance(raised.value, SerializationError)
    finally:
        framing.use_registry(None)


def test_the_registry_format_without_a_registry_is_refused_clearly():
    with pytest.raises(UnknownSchemaError, match="JOBPOST_SCHEMA_REGISTRY_URL"):
        codec.posting_updates().decode(b"\x00\x00\x00\x00\x01\x02")


def test_a_record_type_not_registered_at_start_is_not_written_unframed(registry):
    with pytest.raises(SerializationError, match="not registered"):
        codec.replies().avro.encode({})


def test_a_known_id_is_asked_of_the_registry_once(registry, registry_texts):
    asked = []
    source = registry.source

    def counting(schema_id: int) -> str:
        asked.append(schema_id)
        return source(schema_id)

    registry_texts[12] = codec.posting_updates().avro.text
    data = b"\x00" + (12).to_bytes(4, "big") + codec.posting_updates().encode(update())[5:]
    framing.use_registry(Registry({}, counting))
    for _ in range(3):
        assert codec.posting_updates().decode(data) == update()
    assert asked == [12]


def test_every_topic_but_the_dead_letter_ones_has_a_subject():
    topics = Topics("jobpost")
    specs = {spec.name for spec in topics.specs(3, 1)}
    encoded = set(value_codecs(topics))
    assert {name for name in specs - encoded if not name.endswith(".dlq")} == set()
    assert encoded <= specs
    assert subject(topics.postings) == "jobpost.postings-value"


def test_the_registered_text_is_the_schema_file_with_its_defaults():
    text = json.loads(codec.posting_updates().avro.text)
    assert text["name"] == "PostingUpdate" and text["namespace"] == "dev.jobpost"
    employer = next(f for f in text["fields"] if f["name"] == "employer")
    assert employer["default"] == "default"
