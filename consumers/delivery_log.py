"""Where what a version came to is written, in Kafka: the posting's delivery state to
`jobpost.deliveries` and then the local store, dead letters to `jobpost.<board>.dlq`, each
returning once Kafka acknowledged it; timeline events to `jobpost.delivery-events`, without
waiting; changes of the job at the board for its employer (`publish_listing_event`)."""

from __future__ import annotations

import logging

from confluent_kafka import Message, Producer

from consumers.delivery_states import StoredStates
from consumers.items import Item
from consumers.listing_changes import ListingChange
from runtime.dead_letters import dead_letter
from runtime.deliveries import event_record, publish, state_record
from runtime.listing_events import listing_event, stable_event_id
from runtime.listing_events import publish_listing_event as runtime_publish
from runtime.outbox import deliver
from schemas.deliveries import DeliveryState
from schemas.events import DeliveryEvent
from schemas.listing_events import Listing, ListingProblem
from schemas.topics import Component, Topics

log = logging.getLogger(__name__)


class KafkaDeliveryLog:
    def __init__(self, producer: Producer, topics: Topics, group: Component, states: StoredStates) -> None:
        self.producer = producer
        self.topics = topics
        self.group = group
        self.states = states

    async def record(self, item: Item, state: DeliveryState) -> None:
        outgoing = state_record(self.topics.deliveries, item.partition, state)
        offset = await deliver(self.producer, outgoing)
        assert outgoing.value is not None
        self.states.record(item.partition, state, outgoing.value, offset)  # no await between

    def event(self, item: Item, event: DeliveryEvent) -> None:
        publish(self.producer, event_record(self.topics.delivery_events, item.partition, event))

    def listing_change(self, item: Item, change: ListingChange) -> None:
        publish_listing_event(self.producer, self.topics, item.partition, change)

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        """The version's record as it was read (a redrive request's: the dead-lettered
        version it carries), for the board's dead-letter topic."""
        assert isinstance(item.source, Message)
        letter = dead_letter(
            self.topics,
            self.group,
            item.source,
            error,
            attempts=attempts,
            first_attempt_ms=first_attempt_ms,
            version=item.version,
            posting_id=item.posting_id,
            value=None if item.request is None else item.request.update,
        )
        await deliver(self.producer, letter)


def publish_listing_event(producer: Producer, topics: Topics, partition: int, change: ListingChange) -> None:
    """THE place where a change of a job at a board becomes an event for its employer, on
    `jobpost.listing-events` (the posting's partition number), without waiting. Its id is
    made from the change (posting, version, board, type, the board's `since`), so a change
    published again after a restart reaches the employer's receiver under the same
    webhook-id. A change whose employer is not known matches no endpoint: not published."""
    if change.employer is None:
        log.debug(
            "listing event %s for %s v%d: no employer known", change.type, change.posting_id, change.version
        )
        return
    job = change.job
    listing = None
    if job is not None and job.status is not None:
        since = job.since if job.since is not None else change.at
        listing = Listing(job.status.value.lower(), since, job.job_id, job.url, job.reason)
    problem = ListingProblem(change.problem) if change.problem else None
    identity = (change.posting_id, change.version, change.board.value, change.type)
    event = listing_event(
        change.type,
        change.employer,
        change.posting_id,
        change.version,
        board=change.board.value,
        listing=listing,
        problem=problem,
        at=change.at,
        event_id=stable_event_id(*identity, None if listing is None else listing.since),
    )
    runtime_publish(producer, topics, partition, event)
