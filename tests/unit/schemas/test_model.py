"""The record types against their Avro schemas: same field names, same enum symbols, and
every value survives the typed codec."""

import dataclasses
import json
from enum import StrEnum

import pytest

from schemas.codec import AVRO_DIR, AvroCodec, RecordCodec, SerializationError, load_schema
from schemas.deliveries import BoardJob, DeliveryState
from schemas.enums import (
    DeliveryOutcome,
    DeliveryStatus,
    DescriptionFormat,
    EmploymentType,
    JobHeld,
    ListingStatus,
    SalaryPeriod,
    Workplace,
)
from schemas.events import DeliveryEvent
from schemas.model import Action, Command, Destination, Op, Outcome, Posting, PostingUpdate, Reply

TYPES = {
    "posting_update": PostingUpdate,
    "command": Command,
    "reply": Reply,
    "delivery_state": DeliveryState,
    "delivery_event": DeliveryEvent,
}
ENUMS = {
    "PostingOp": Op,
    "CommandAction": Action,
    "CommandOutcome": Outcome,
    "DeliveryStatus": DeliveryStatus,
    "DeliveryOutcome": DeliveryOutcome,
    "DescriptionFormat": DescriptionFormat,
    "Workplace": Workplace,
    "EmploymentType": EmploymentType,
    "SalaryPeriod": SalaryPeriod,
    "JobHeld": JobHeld,
    "ListingStatus": ListingStatus,
}
POSTING = Posting("Ingénieur — 東京", "Builds things", "remote ok")
T = 1_700_000_000_000
SAMPLES = [
    PostingUpdate("p-1", 3, Op.UPDATED, "p-1:3", "req-9", POSTING, T + 123, T + 100, "f00d"),
    Command("req-9", "p-1", Action.REPLACE, T + 100, POSTING, 2, "corr-1", "f00d"),
    Command("req-8", "p-1", Action.DELETE, 1),
    Reply("req-9", "corr-1", "p-1", Outcome.ACCEPTED, 3, False, T + 123),
    Reply("req-7", "corr-2", "p-2", Outcome.NOT_FOUND),
    DeliveryState(Destination.SEARCH, "p-1", DeliveryStatus.RETRYING, 2, 3, 4, 10, 20, "503", 30),
    DeliveryState(Destination.LINKEDIN, "p-1", DeliveryStatus.DELIVERED, updated_at=1),
    DeliveryState(
        Destination.LINKEDIN,
        "p-1",
        DeliveryStatus.DELIVERED,
        3,
        updated_at=T,
        job=BoardJob(
            JobHeld.OPEN,
            "urn:li:jobPosting:4200000001",
            "https://www.linkedin.com/jobs/view/4200000001",
            "acme",
            ListingStatus.CLOSED_BY_BOARD,
            "LinkedIn automatically closes jobs that are reported multiple times",
            T + 5,
            T,
            T + 180 * 86_400_000,
            None,
            T + 60_000,
            b"\xc3\x01content",
        ),
    ),
    DeliveryEvent("p-1", 2, Destination.INDEED, 3, DeliveryOutcome.RETRYING, T, "503 — busy", T + 3000),
    DeliveryEvent("p-1", 3, Destination.SEARCH, 0, DeliveryOutcome.SKIPPED, T),
]


def newest_schema(stem: str) -> dict:
    newest = max(AVRO_DIR.glob(f"{stem}.v*.avsc"), key=lambda p: int(p.name.split(".v")[-1][:-5]))
    return json.loads(newest.read_text())


def typed(record_type) -> RecordCodec:
    stem = next(s for s, t in TYPES.items() if t is record_type)
    return RecordCodec(AvroCodec.for_record(stem), record_type.from_avro)


@pytest.mark.parametrize("stem", TYPES)
def test_field_names_are_the_avro_ones(stem):
    schema = newest_schema(stem)
    assert {f.name for f in dataclasses.fields(TYPES[stem])} == {f["name"] for f in schema["fields"]}
    for field in schema["fields"]:
        snapshot = [
            t
            for t in (field["type"] if isinstance(field["type"], list) else [field["type"]])
            if isinstance(t, dict) and t.get("name") == "PostingSnapshot"
        ]
        if snapshot:
            assert {f.name for f in dataclasses.fields(Posting)} == {f["name"] for f in snapshot[0]["fields"]}


def _enums(schema) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    if isinstance(schema, dict):
        if schema.get("type") == "enum":
            found[schema["name"]] = schema["symbols"]
        for value in schema.values():
            found.update(_enums(value))
    elif isinstance(schema, list):
        for value in schema:
            found.update(_enums(value))
    return found


def test_enum_symbols_are_the_avro_ones():
    symbols = {}
    for stem in TYPES:
        symbols.update(_enums(newest_schema(stem)))
    assert set(symbols) == set(ENUMS)
    for name, enum in ENUMS.items():
        assert [m.value for m in enum] == symbols[name]
        assert all(m.name == m.value for m in enum)


def test_destinations_have_one_name_each():
    assert [d.value for d in Destination] == ["linkedin", "indeed", "search"]
    assert all(isinstance(d, StrEnum) and f"{d}/p" == f"{d.value}/p" for d in Destination)


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_every_value_survives_the_typed_codec(record):
    codec = typed(type(record))
    decoded = codec.decode(codec.encode(record))
    assert decoded == record
    assert type(decoded) is type(record)


def test_typed_bytes_are_the_dict_level_bytes():
    codec = typed(PostingUpdate)
    assert codec.encode(SAMPLES[0]) == codec.avro.encode(SAMPLES[0].to_avro())
    assert codec.fingerprint == codec.avro.fingerprint


def test_decoded_enums_are_members():
    update = typed(PostingUpdate).decode(typed(PostingUpdate).encode(SAMPLES[0]))
    assert update.op is Op.UPDATED
    state = typed(DeliveryState).decode(typed(DeliveryState).encode(SAMPLES[5]))
    assert (state.destination, state.status) == (Destination.SEARCH, DeliveryStatus.RETRYING)
    assert type(state.destination) is Destination and type(state.status) is DeliveryStatus


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_decoded_records_are_as_immutable_and_hashable_as_built_ones(record):
    decoded = typed(type(record)).decode(typed(type(record)).encode(record))
    for instance in (record, decoded):
        with pytest.raises(dataclasses.FrozenInstanceError):
            instance.posting_id = "other"
    assert hash(decoded) == hash(record)
    assert repr(decoded) == repr(record)


@pytest.mark.parametrize(
    "misfit",
    [
        dataclasses.replace(SAMPLES[0], version="three"),
        dataclasses.replace(SAMPLES[0], op="ARCHIVED"),
        dataclasses.replace(SAMPLES[0], posting=None),
        dataclasses.replace(SAMPLES[0], posting=Posting("bad \ud800 text", "")),
    ],
    ids=["version not a long", "op not a symbol", "no posting", "lone surrogate"],
)
def test_a_record_that_does_not_fit_raises_serialization_error(misfit):
    with pytest.raises(SerializationError):
        typed(PostingUpdate).encode(misfit)


def test_a_dict_is_not_a_record():
    with pytest.raises(SerializationError):
        typed(PostingUpdate).encode(SAMPLES[0].to_avro())  # type: ignore[arg-type]


def test_an_enum_symbol_this_code_does_not_know_raises_serialization_error():
    # A reader schema from a release that added a symbol the types lack.
    schema = load_schema("posting_update.v2.avsc")
    schema = json.loads(json.dumps(schema).replace('"DELETED"]', '"DELETED", "ARCHIVED"]'))
    wider = AvroCodec(schema)
    data = wider.encode({**SAMPLES[0].to_avro(), "op": "ARCHIVED"})
    with pytest.raises(SerializationError, match="ARCHIVED"):
        RecordCodec(wider, PostingUpdate.from_avro).decode(data)


def test_an_unknown_destination_raises_serialization_error():
    codec = typed(DeliveryState)
    data = codec.avro.encode({**SAMPLES[5].to_avro(), "destination": "search-indexer"})
    with pytest.raises(SerializationError, match="search-indexer"):
        codec.decode(data)


def test_a_delivery_state_from_before_v3_reads_with_what_the_board_holds_derived():
    old = AvroCodec(load_schema("delivery_state.v2.avsc"))
    current = typed(DeliveryState)
    fields = {**SAMPLES[5].to_avro(), "destination": "linkedin"}
    del fields["job"]

    def read(**changes: object) -> DeliveryState:
        return current.decode(old.encode({**fields, **changes}))

    delivered = read(status="DELIVERED", delivered_version=2)
    assert delivered.job is None and delivered.held == JobHeld.OPEN  # its id unknown
    assert read(status="CLOSED", delivered_version=3).held == JobHeld.CLOSED
    assert read(status="FAILED", delivered_version=None).held == JobHeld.NONE


def test_a_delivery_state_from_v3_reads_with_no_replaced_jobs_to_expire():
    old = AvroCodec(load_schema("delivery_state.v3.avsc"))
    job = BoardJob(JobHeld.OPEN, "s1", status=ListingStatus.LIVE)
    fields = {**SAMPLES[5].to_avro(), "destination": "indeed", "job": job.to_avro()}
    del fields["job"]["replaced_ids"]
    current = typed(DeliveryState)
    state = current.decode(old.encode(fields))
    assert state.job == job and state.job.replaced_ids == ()
    kept = dataclasses.replace(job, replaced_ids=("s0",))
    assert current.decode(current.encode(dataclasses.replace(state, job=kept))).job == kept
