"""The records of listing events and webhooks: their fields are the Avro ones, they read back
as written, and the rules an endpoint's registration carries (which events, which secrets)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from schemas import codec
from schemas.codec import AVRO_DIR
from schemas.listing_events import EVENT_TYPES, Listing, ListingEvent, ListingProblem, rfc3339
from schemas.webhooks import (
    WebhookDelivery,
    WebhookEndpoint,
    WebhookReplay,
    WebhookSecret,
    subscribes,
    unknown_event_filter,
)

T = 1_764_581_400_000
LIVE = ListingEvent(
    "e-1", "listing.live", "acme", "p-1", 3, T, "linkedin", Listing("live", T, "urn:1", "https://x")
)
REFUSED = ListingEvent(
    "e-2",
    "listing.refused",
    "acme",
    "p-1",
    4,
    T,
    "indeed",
    problem=ListingProblem("short", "too_short", "/description"),
)
ACCEPTED = ListingEvent("e-3", "posting.accepted", "acme", "p-1", 5, T)
ENDPOINT = WebhookEndpoint(
    "ep_1", "acme", "https://ats.example/h", ("listing.*",), (WebhookSecret(b"tok", None),), T
)
DELIVERY = WebhookDelivery(
    "ep_1", "e-1", "p-1", b"\x01\x02", "listing-events", 7, 2, T + 5, T, T - 1, "HTTP 503"
)
REPLAY = WebhookReplay("rp_1", "ep_1", T - 3600_000, "ats-acme", T)
SAMPLES = [
    (codec.listing_events(), LIVE),
    (codec.listing_events(), REFUSED),
    (codec.listing_events(), ACCEPTED),
    (codec.webhook_endpoints(), ENDPOINT),
    (codec.webhook_deliveries(), DELIVERY),
    (codec.webhook_replays(), REPLAY),
]
SCHEMAS = {
    ListingEvent: "listing_event.v1.avsc",
    WebhookEndpoint: "webhook_endpoint.v1.avsc",
    WebhookDelivery: "webhook_delivery.v1.avsc",
    WebhookReplay: "webhook_replay.v1.avsc",
}


@pytest.mark.parametrize(("record_codec", "record"), SAMPLES)
def test_a_record_reads_back_as_written(record_codec, record):
    assert record_codec.decode(record_codec.encode(record)) == record


@pytest.mark.parametrize("record_type", list(SCHEMAS))
def test_field_names_are_the_avro_ones(record_type):
    schema = json.loads((AVRO_DIR / SCHEMAS[record_type]).read_text())
    assert {f.name for f in dataclasses.fields(record_type)} == {f["name"] for f in schema["fields"]}


def test_an_endpoint_takes_its_employers_events_of_its_types_from_its_creation_on():
    assert ENDPOINT.takes("listing.live", "acme", T)
    assert not ENDPOINT.takes("posting.accepted", "acme", T)  # not in its list
    assert not ENDPOINT.takes("listing.live", "globex", T)  # another employer's
    assert not ENDPOINT.takes("listing.live", "acme", T - 1)  # before it was registered
    assert not dataclasses.replace(ENDPOINT, disabled_at=T).takes("listing.live", "acme", T)
    assert not dataclasses.replace(ENDPOINT, deleted=True).takes("listing.live", "acme", T)


def test_an_events_list_names_types_families_or_everything():
    assert subscribes(("*",), "listing.some_later_type")
    assert subscribes(("posting.*",), "posting.accepted") and not subscribes(("posting.*",), "listing.live")
    assert subscribes(("listing.closed",), "listing.closed")
    assert not subscribes(("listing.closed",), "listing.closed_by_board")
    assert [e for e in ("*", "listing.*", *EVENT_TYPES) if unknown_event_filter(e)] == []
    assert [
        e for e in ("listing", "listing.", "jobs.*", "listing.gone", "") if not unknown_event_filter(e)
    ] == []


def test_a_rotation_keeps_the_old_secret_for_the_overlap_and_drops_ended_ones():
    ended = WebhookSecret(b"oldest", T - 1)
    endpoint = dataclasses.replace(ENDPOINT, secrets=(WebhookSecret(b"current"), ended))
    rotated = endpoint.rotated(b"new", T, 24 * 3600_000)
    assert rotated.secrets == (WebhookSecret(b"new"), WebhookSecret(b"current", T + 24 * 3600_000))
    assert [s.live(T + 24 * 3600_000 - 1) for s in rotated.secrets] == [True, True]
    assert [s.live(T + 24 * 3600_000) for s in rotated.secrets] == [True, False]


def test_the_webhook_body_is_what_the_contract_says():
    assert ACCEPTED.webhook() == {
        "type": "posting.accepted",
        "timestamp": "2025-12-01T09:30:00.000Z",
        "data": {"posting_id": "p-1", "version": 5, "board": None},
    }
    assert rfc3339(7) == "1970-01-01T00:00:00.007Z"


def test_every_webhook_topic_has_its_record_type():
    from schemas.subjects import value_codecs
    from schemas.topics import Component, Topics

    topics = Topics("jobpost")
    codecs = value_codecs(topics)
    assert codecs[topics.listing_events].schema["name"] == "dev.jobpost.ListingEvent"
    assert codecs[topics.webhooks].schema["name"] == "dev.jobpost.WebhookEndpoint"
    assert codecs[topics.webhook_pending].schema["name"] == "dev.jobpost.WebhookDelivery"
    assert codecs[topics.webhook_replays].schema["name"] == "dev.jobpost.WebhookReplay"
    assert topics.dlq(Component.WEBHOOKS) == "jobpost.webhooks.dlq"
