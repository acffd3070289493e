"""A change of the job at a board, as the event its employer's webhooks receive."""

from __future__ import annotations

from consumers.delivery_log import publish_listing_event
from consumers.listing_changes import ListingChange
from schemas import codec
from schemas.deliveries import BoardJob
from schemas.enums import JobHeld, ListingStatus
from schemas.model import Destination
from schemas.topics import Topics

TOPICS = Topics("jobpost")
LIVE = BoardJob(
    JobHeld.OPEN,
    "urn:li:jobPosting:7301",
    "https://www.linkedin.com/jobs/view/7301",
    "acme",
    ListingStatus.LIVE,
    None,
    1_796_000_000_000,
)


class Producer:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def produce(self, topic: str, **options: object) -> None:
        self.sent.append({"topic": topic, **options})

    def poll(self, _timeout: float = 0) -> int:
        return 0


def change(job: BoardJob | None = LIVE, employer: str | None = "acme", problem: str | None = None):
    return ListingChange(
        "listing.live", employer, "p-1", 3, Destination.LINKEDIN, job, problem, 1_796_000_000_500
    )


def test_a_change_is_published_on_the_postings_partition_with_the_listing_as_the_contract_shows_it():
    producer = Producer()
    publish_listing_event(producer, TOPICS, 2, change())

    (sent,) = producer.sent
    event = codec.listing_events().decode(sent["value"])
    assert (sent["topic"], sent["partition"], sent["key"]) == ("jobpost.listing-events", 2, "p-1")
    assert (event.type, event.employer, event.posting_id, event.version, event.board) == (
        "listing.live",
        "acme",
        "p-1",
        3,
        "linkedin",
    )
    assert event.listing is not None
    assert (event.listing.status, event.listing.id, event.listing.url, event.listing.since) == (
        "live",
        "urn:li:jobPosting:7301",
        "https://www.linkedin.com/jobs/view/7301",
        1_796_000_000_000,
    )


def test_the_same_change_published_again_has_the_same_id_and_another_change_another():
    producer = Producer()
    for published in (change(), change(), change(problem="LinkedIn: Invalid Field: /city")):
        publish_listing_event(producer, TOPICS, 2, published)

    ids = [codec.listing_events().decode(s["value"]).event_id for s in producer.sent]
    assert ids[0] == ids[1]  # a restart's repeat: the receiver sees the same webhook-id
    assert (
        codec.listing_events().decode(producer.sent[2]["value"]).problem.detail
        == "LinkedIn: Invalid Field: /city"
    )


def test_a_change_without_a_known_employer_is_not_published():
    producer = Producer()
    publish_listing_event(producer, TOPICS, 2, change(employer=None))
    assert producer.sent == []
