"""The events a dispatcher reads: a board's, from `jobpost.listing-events` as written, and
`posting.accepted`, derived from each version on `jobpost.postings` (its id made from the
version, so reading the version again gives the same event and the same webhook-id)."""

from __future__ import annotations

from confluent_kafka import Message

from runtime import records
from runtime.listing_events import stable_event_id
from schemas.listing_events import POSTING_ACCEPTED, ListingEvent
from schemas.model import PostingUpdate

POSTINGS = "postings"  # the sources, as a WebhookDelivery names them
LISTING_EVENTS = "listing-events"


def accepted(update: PostingUpdate) -> ListingEvent:
    """The `posting.accepted` event of a version."""
    event_id = stable_event_id(update.posting_id, update.version, POSTING_ACCEPTED, update.accepted_at)
    return ListingEvent(
        event_id, POSTING_ACCEPTED, update.employer, update.posting_id, update.version, update.accepted_at
    )


def read(source: str, message: Message) -> ListingEvent | None:
    """The event of a source's record; None for a postings tombstone (its DELETED version
    before it was the event). Raises records.PoisonRecord for a record nobody can use."""
    if source == LISTING_EVENTS:
        return records.listing_event(message)
    _, update = records.posting_update(message)
    return None if update is None else accepted(update)
