"""The record of `jobpost.listing-events`: a change of a posting's state, accepted by us or
at a board, as the employer is told of it (the topic, then signed webhooks).

`type` is text, not an enum, on purpose: a dispatcher of an older release passes on a type
a newer publisher added instead of refusing the record. `EVENT_TYPES` names the types of
this release; the publisher (`runtime.listing_events`) refuses any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

POSTING_ACCEPTED = "posting.accepted"
EVENT_TYPES = (
    POSTING_ACCEPTED,  # a version accepted by jobpost (derived from jobpost.postings)
    "listing.submitted",  # sent to the board, its outcome not known yet
    "listing.received",  # the board took it (Indeed: indexed later, after its checks)
    "listing.live",  # listed, with its URL
    "listing.refused",  # the board refused the version (its reason and pointer)
    "listing.closed",  # closed by us (a delete, an expiry)
    "listing.closed_by_board",  # closed by the board on its own (moderation, lifetime)
    "listing.expired",
    "listing.dead_lettered",  # the version's retries were spent
    "listing.redriven",  # a dead-lettered version attempted again
)


@dataclass(frozen=True, slots=True)
class Listing:
    """The job at the board, as CONTRACT.md's `listing` object."""

    status: str
    since: int
    id: str | None = None
    url: str | None = None
    reason: str | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "status": self.status,
            "reason": self.reason,
            "since": self.since,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> Listing:
        return Listing(record["status"], record["since"], record["id"], record["url"], record["reason"])


@dataclass(frozen=True, slots=True)
class ListingProblem:
    """Why a board refused a version, in the board's terms."""

    detail: str
    code: str | None = None
    pointer: str | None = None

    def to_avro(self) -> dict[str, Any]:
        return {"code": self.code, "pointer": self.pointer, "detail": self.detail}

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> ListingProblem:
        return ListingProblem(record["detail"], record["code"], record["pointer"])


@dataclass(frozen=True, slots=True)
class ListingEvent:
    event_id: str  # the webhook-id of every delivery of it
    type: str
    employer: str
    posting_id: str
    version: int
    at: int  # epoch millis
    board: str | None = None
    listing: Listing | None = None
    problem: ListingProblem | None = None

    def to_avro(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "type": self.type,
            "employer": self.employer,
            "posting_id": self.posting_id,
            "version": self.version,
            "board": self.board,
            "listing": None if self.listing is None else self.listing.to_avro(),
            "problem": None if self.problem is None else self.problem.to_avro(),
            "at": self.at,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> ListingEvent:
        listing, problem = record["listing"], record["problem"]
        return ListingEvent(
            record["event_id"],
            record["type"],
            record["employer"],
            record["posting_id"],
            record["version"],
            record["at"],
            record["board"],
            None if listing is None else Listing.from_avro(listing),
            None if problem is None else ListingProblem.from_avro(problem),
        )

    def data(self) -> dict[str, Any]:
        """The `data` of its webhook body: what the event says of the posting."""
        data: dict[str, Any] = {"posting_id": self.posting_id, "version": self.version, "board": self.board}
        if self.listing is not None:
            data["listing"] = self.listing.to_avro()
        if self.problem is not None:
            data["problem"] = self.problem.to_avro()
        return data

    def webhook(self) -> dict[str, Any]:
        """The body of its webhook, as the Standard Webhooks specification shapes one:
        `{"type", "timestamp" (RFC 3339, when it happened), "data"}`."""
        return {"type": self.type, "timestamp": rfc3339(self.at), "data": self.data()}


def rfc3339(epoch_ms: int) -> str:
    """`2026-12-01T09:30:00.123Z`."""
    moment = datetime.fromtimestamp(epoch_ms // 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"
