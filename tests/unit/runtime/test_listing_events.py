"""Publishing a listing event: on the posting's partition number, keyed by posting id,
without waiting; a refusal counted, never raised; posting.accepted is never published."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException

from runtime import listing_events
from runtime.listing_events import EVENTS_DROPPED, listing_event, publish_listing_event, stable_event_id
from schemas import codec
from schemas.listing_events import Listing
from schemas.topics import Topics


class FakeProducer:
    def __init__(self, refuse: Exception | None = None) -> None:
        self.produced: list[dict] = []
        self.refuse = refuse

    def produce(self, topic, key=None, value=None, **options) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.produced.append({"topic": topic, "key": key, "value": value, **options})


def test_an_event_goes_to_the_postings_partition_keyed_by_its_posting():
    producer = FakeProducer()
    event = listing_event(
        "listing.live", "acme", "p-1", 3, board="linkedin", listing=Listing("live", 5, "urn:1")
    )
    publish_listing_event(producer, Topics("jobpost"), 4, event)  # type: ignore[arg-type]
    [record] = producer.produced
    assert (record["topic"], record["key"], record["partition"]) == ("jobpost.listing-events", "p-1", 4)
    assert codec.listing_events().decode(record["value"]) == event
    assert callable(record["on_delivery"])


def test_a_refused_event_is_counted_and_the_board_delivery_goes_on():
    before = EVENTS_DROPPED._value.get()
    event = listing_event("listing.closed", "acme", "p-1", 3, board="indeed")
    publish_listing_event(FakeProducer(BufferError("full")), Topics("jobpost"), 0, event)  # type: ignore[arg-type]
    publish_listing_event(FakeProducer(KafkaException("gone")), Topics("jobpost"), 0, event)  # type: ignore[arg-type]
    assert EVENTS_DROPPED._value.get() == before + 2


def test_only_a_boards_types_are_published():
    with pytest.raises(ValueError, match="not a listing event type"):
        listing_event("listing.exploded", "acme", "p-1", 1)
    accepted = listing_event("posting.accepted", "acme", "p-1", 1)
    with pytest.raises(ValueError, match="not a type a board publishes"):
        publish_listing_event(FakeProducer(), Topics("jobpost"), 0, accepted)  # type: ignore[arg-type]


def test_an_event_id_is_fresh_or_stable_as_the_publisher_needs():
    first, second = (listing_event("listing.live", "acme", "p", 1).event_id for _ in range(2))
    assert first != second
    assert stable_event_id("p", 1, "linkedin", "listing.live", 5) == stable_event_id(
        "p", 1, "linkedin", "listing.live", 5
    )
    assert stable_event_id("p", 1, "linkedin", "listing.live", 5) != stable_event_id(
        "p", 1, "indeed", "listing.live", 5
    )
    assert listing_events.listing_event("listing.live", "a", "p", 1, event_id="mine").event_id == "mine"
