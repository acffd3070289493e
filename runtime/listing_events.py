"""Publishing a change of a posting's state at a board (`schemas.listing_events`) to
`jobpost.listing-events`, where the webhooks dispatcher picks it up for the employer's
endpoints. The board consumers call `publish_listing_event` beside their delivery states:
without waiting, like the timeline's events (`runtime.deliveries.publish`), so a board
delivery never waits for its employer's notification. An event Kafka refuses is counted
(`jobpost_listing_events_dropped_total`) and logged, never retried.

Its record is keyed by posting id and written to the posting's partition number (the one
its versions have in `jobpost.postings`), so the dispatcher member that owns the posting's
versions reads its events too.
"""

from __future__ import annotations

import logging
import time
import uuid

from confluent_kafka import KafkaException, Producer
from prometheus_client import Counter

from runtime.outbox import Outgoing
from schemas import codec
from schemas.listing_events import EVENT_TYPES, POSTING_ACCEPTED, Listing, ListingEvent, ListingProblem
from schemas.topics import Topics

log = logging.getLogger(__name__)
EVENTS_DROPPED = Counter(
    "jobpost_listing_events_dropped_total",
    "Listing events Kafka did not take (neither the topic nor any webhook carries them)",
)
_EVENT_NAMESPACE = uuid.UUID("0b7d5b0e-4c2a-4f8e-9a51-7d3c2e6f1a90")


def stable_event_id(*parts: object) -> str:
    """An event id that is the same each time the same change is published (a UUID made
    from `parts`, e.g. posting id, version, board, type and the board's `since`): a publisher
    that may publish one change twice, after a restart, gives it this, so the employer's
    receiver recognises the repeat by its webhook-id."""
    return str(uuid.uuid5(_EVENT_NAMESPACE, "/".join(str(p) for p in parts)))


def listing_event(
    event_type: str,
    employer: str,
    posting_id: str,
    version: int,
    *,
    board: str | None = None,
    listing: Listing | None = None,
    problem: ListingProblem | None = None,
    at: int | None = None,
    event_id: str | None = None,
) -> ListingEvent:
    """An event of this release's types at `at` (default: now), with a fresh id unless given."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"{event_type!r} is not a listing event type ({', '.join(EVENT_TYPES)})")
    return ListingEvent(
        event_id or str(uuid.uuid4()),
        event_type,
        employer,
        posting_id,
        version,
        time.time_ns() // 1_000_000 if at is None else at,
        board,
        listing,
        problem,
    )


def listing_event_record(topic: str, partition: int, event: ListingEvent) -> Outgoing:
    return Outgoing(topic, event.posting_id, codec.listing_events().encode(event), partition=partition)


def publish_listing_event(producer: Producer, topics: Topics, partition: int, event: ListingEvent) -> None:
    """Produce the event to `jobpost.listing-events` on the posting's partition number,
    without waiting for Kafka. `posting.accepted` is never published (the dispatcher derives
    it from `jobpost.postings`): ValueError."""
    if event.type == POSTING_ACCEPTED or event.type not in EVENT_TYPES:
        raise ValueError(f"{event.type!r} is not a type a board publishes")
    record = listing_event_record(topics.listing_events, partition, event)
    context = {"posting_id": event.posting_id, "version": event.version}

    def on_delivery(error: object, _message: object) -> None:
        if error is not None:
            EVENTS_DROPPED.inc()
            log.warning("%s refused a listing event: %s", record.topic, error, extra=context)

    try:
        record.produce(producer, on_delivery)
    except (BufferError, KafkaException) as exc:
        EVENTS_DROPPED.inc()
        log.warning("could not produce a listing event to %s: %s", record.topic, exc, extra=context)
