import copy
import dataclasses

import pytest

from schemas import codec
from schemas.codec import AvroCodec, SerializationError, UnknownSchemaError, load_schema
from schemas.enums import DescriptionFormat, Destination, EmploymentType, SalaryPeriod, Workplace
from schemas.model import Action, Command, Op, Posting, PostingLocation, PostingUpdate, Salary


def update(title: str = "Engineer", notes: str = "") -> PostingUpdate:
    return PostingUpdate(
        posting_id="p-1",
        version=3,
        op=Op.UPDATED,
        idempotency_key="p-1:3",
        request_id="req-9",
        request_fingerprint="f00d",
        posting=Posting(title, "Builds things", notes),
        last_update_time_millis=1_700_000_000_123,
        accepted_at=1_700_000_000_100,
    )


def test_round_trip_keeps_every_field():
    c = codec.posting_updates()
    record = update(title="Ingénieur — 東京", notes="remote ok")
    assert c.decode(c.encode(record)) == record


def test_header_is_magic_plus_little_endian_fingerprint():
    c = codec.posting_updates()
    data = c.encode(update())
    assert data[:2] == b"\xc3\x01"
    assert int.from_bytes(data[2:10], "little", signed=True) == c.fingerprint


def test_fingerprint_matches_the_avro_specification():
    # Avro's own test vector: parsingFingerprint64 of "null" (share/test/data/schema-tests.txt).
    assert codec.schema_fingerprint("null") == 7195948357588979594


def test_every_record_type_has_its_own_fingerprint():
    fingerprints = {
        f().fingerprint for f in (codec.posting_updates, codec.commands, codec.replies, codec.delivery_states)
    }
    assert len(fingerprints) == 4


def test_unknown_fingerprint_is_a_clear_error():
    data = codec.commands().encode(Command("r", "p", Action.DELETE, received_at=1))
    with pytest.raises(UnknownSchemaError, match="unknown writer schema"):
        codec.posting_updates().decode(data)


@pytest.mark.parametrize("data", [b"", b"\x00\x01garbage", b"\xc3\x01\x00"])
def test_bytes_that_are_not_a_record_raise_serialization_error(data):
    with pytest.raises(SerializationError):
        codec.posting_updates().decode(data)


def test_truncated_body_raises_serialization_error():
    data = codec.posting_updates().encode(update())
    with pytest.raises(SerializationError, match="cannot decode"):
        codec.posting_updates().decode(data[:-6])


def test_lone_surrogate_is_refused_not_crashed():
    with pytest.raises(SerializationError, match="cannot be encoded"):
        codec.posting_updates().encode(update(title="bad \ud800 text"))


def test_missing_field_is_refused_by_the_dict_level_codec():
    record = update().to_avro()
    del record["version"]
    with pytest.raises(SerializationError):
        codec.posting_updates().avro.encode(record)


def test_a_released_v1_record_is_read_by_the_v2_reader():
    v1_record = update().to_avro()
    del v1_record["request_fingerprint"]
    written_by_v1 = AvroCodec(load_schema("posting_update.v1.avsc")).encode(v1_record)

    read = codec.posting_updates().decode(written_by_v1)

    assert read == dataclasses.replace(update(), request_fingerprint="")


def test_old_writer_is_read_by_newer_reader():
    new = load_schema("posting_update.v2.avsc")
    old = copy.deepcopy(new)
    snapshot = next(f for f in old["fields"] if f["name"] == "posting")["type"]
    snapshot["fields"] = [f for f in snapshot["fields"] if f["name"] != "notes"]
    old_record = update().to_avro()
    del old_record["posting"]["notes"]

    written_by_old = AvroCodec(old).encode(old_record)
    read = AvroCodec(new, writers=[old]).decode(written_by_old)

    assert read["posting"] == {"title": "Engineer", "description": "Builds things", "notes": ""}
    with pytest.raises(UnknownSchemaError):
        AvroCodec(new).decode(written_by_old)  # a reader that never knew the old schema


def test_for_record_reads_every_release_and_writes_the_newest():
    c = AvroCodec.for_record("posting_update")
    assert c.schema["name"] == "dev.jobpost.PostingUpdate"


def test_records_of_the_release_before_employers_read_with_the_default_employer_and_no_new_fields():
    written_by_v2 = AvroCodec(load_schema("posting_update.v2.avsc")).encode(update().to_avro())
    read = codec.posting_updates().decode(written_by_v2)
    assert (read.employer, read.actor, read.posting.location, read.posting.apply_url) == (
        "default",
        "",
        None,
        None,
    )

    command_v2 = Command("r", "p", Action.REPLACE, received_at=1, posting=Posting("T", "d"))
    read_command = codec.commands().decode(
        AvroCodec(load_schema("command.v2.avsc")).encode(command_v2.to_avro())
    )
    assert (read_command.employer, read_command.actor) == ("default", "")

    state_v1 = {
        "posting_id": "p",
        "version": 2,
        "deleted": False,
        "last_update_time_millis": 5,
        "offset": 9,
        "keys": [],
    }
    read_state = codec.sequencer_states().decode(
        AvroCodec(load_schema("sequencer_state.v1.avsc")).encode(state_v1)
    )
    assert (read_state.version, read_state.employer) == (2, "default")


def test_the_new_fields_round_trip():
    record = dataclasses.replace(
        update(),
        employer="acme",
        actor="ats-acme",
        posting=Posting("T", "d", "", location="Berlin, Germany", apply_url="https://acme.example/jobs/1"),
    )
    assert codec.posting_updates().decode(codec.posting_updates().encode(record)) == record


# The posting's fields that records from before listable postings lack.
LISTING_FIELDS = (
    "description_format",
    "locations",
    "workplace",
    "employment_type",
    "salary",
    "expires_at",
    "boards",
)


def test_records_of_the_release_before_listable_postings_read_with_the_listing_defaults():
    # v3 (today's records on every topic): a free-text location, no structured fields.
    v3 = dataclasses.replace(
        update(), employer="acme", posting=Posting("T", "d", "", "Berlin, Germany", "https://a.example/1")
    )
    record = v3.to_avro()
    for name in LISTING_FIELDS:
        del record["posting"][name]
    read = codec.posting_updates().decode(AvroCodec(load_schema("posting_update.v3.avsc")).encode(record))
    assert read == v3
    assert (read.posting.location, read.posting.locations, read.posting.boards) == (
        "Berlin, Germany",
        (),
        (Destination.LINKEDIN, Destination.INDEED),
    )

    command = Command("r", "p", Action.CREATE, received_at=1, posting=Posting("T", "d"), employer="acme")
    fields = command.to_avro()
    for name in LISTING_FIELDS:
        del fields["posting"][name]
    assert codec.commands().decode(AvroCodec(load_schema("command.v4.avsc")).encode(fields)) == command


def test_a_listable_posting_round_trips_through_the_postings_and_the_commands():
    posting = Posting(
        "Senior Data Engineer",
        "<p>Streams</p>",
        "",
        None,
        "https://careers.example.com/jobs/1",
        DescriptionFormat.HTML,
        (PostingLocation("DE", "Berlin", "Berlin", "10115"), PostingLocation("FR", "Lyon")),
        Workplace.HYBRID,
        EmploymentType.CONTRACT,
        Salary(70_000.0, "EUR", SalaryPeriod.YEAR, 90_000.0),
        4_102_444_800_000,
        (Destination.INDEED,),
    )
    record = dataclasses.replace(update(), posting=posting)
    assert codec.posting_updates().decode(codec.posting_updates().encode(record)) == record
    command = Command("r", "p", Action.REPLACE, received_at=1, posting=posting)
    assert codec.commands().decode(codec.commands().encode(command)) == command
    search_only = dataclasses.replace(record, posting=dataclasses.replace(posting, boards=(), salary=None))
    assert codec.posting_updates().decode(codec.posting_updates().encode(search_only)) == search_only
