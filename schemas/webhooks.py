"""The records of webhooks: a registered endpoint (`jobpost.webhooks`), one event on its way
to one endpoint (`jobpost.webhook-pending`, and `jobpost.webhooks.dlq` once its retries are
spent), and a request to deliver an endpoint's events again (`jobpost.webhook-replays`);
and which event types an endpoint's `events` list takes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from schemas.listing_events import EVENT_TYPES

EVERY_EVENT = "*"


def subscribes(events: tuple[str, ...], event_type: str) -> bool:
    """Whether an endpoint whose `events` list is `events` takes `event_type`: a type by
    name, a family by `family.*` (`listing.*`), or every type, later ones too (`*`)."""
    for entry in events:
        if entry in (EVERY_EVENT, event_type):
            return True
        if entry.endswith(".*") and event_type.startswith(entry[:-1]):
            return True
    return False


def unknown_event_filter(entry: str) -> bool:
    """An `events` entry that names no type of this release: neither a type, a family of
    some (`listing.*`), nor `*`."""
    if entry == EVERY_EVENT or entry in EVENT_TYPES:
        return False
    return not (entry.endswith(".*") and any(t.startswith(entry[:-1]) for t in EVENT_TYPES))


@dataclass(frozen=True, slots=True)
class WebhookSecret:
    secret_encrypted: bytes  # the Fernet token of the `whsec_...` text
    not_after: int | None = None  # epoch millis it stops signing; None: the current secret

    def live(self, now_ms: int) -> bool:
        return self.not_after is None or now_ms < self.not_after


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    id: str
    employer: str
    url: str
    events: tuple[str, ...]
    secrets: tuple[WebhookSecret, ...]  # the newest first
    created_at: int
    deleted: bool = False
    disabled_at: int | None = None  # it answered 410 Gone
    disabled_reason: str | None = None

    def takes(self, event_type: str, employer: str, at: int) -> bool:
        """Whether an event of this type, employer and time is delivered to it."""
        return (
            not self.deleted
            and self.disabled_at is None
            and employer == self.employer
            and at >= self.created_at
            and subscribes(self.events, event_type)
        )

    def rotated(self, new_secret: bytes, now_ms: int, overlap_ms: int) -> WebhookEndpoint:
        """With a new current secret; the current one signs too until `overlap_ms` from now,
        older ones until their own end (those already past it are dropped)."""
        kept = tuple(
            replace(s, not_after=now_ms + overlap_ms if s.not_after is None else s.not_after)
            for s in self.secrets
            if s.live(now_ms)
        )
        return replace(self, secrets=(WebhookSecret(new_secret), *kept))

    def to_avro(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "employer": self.employer,
            "url": self.url,
            "events": list(self.events),
            "secrets": [
                {"secret_encrypted": s.secret_encrypted, "not_after": s.not_after} for s in self.secrets
            ],
            "created_at": self.created_at,
            "deleted": self.deleted,
            "disabled_at": self.disabled_at,
            "disabled_reason": self.disabled_reason,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> WebhookEndpoint:
        return WebhookEndpoint(
            record["id"],
            record["employer"],
            record["url"],
            tuple(record["events"]),
            tuple(WebhookSecret(s["secret_encrypted"], s["not_after"]) for s in record["secrets"]),
            record["created_at"],
            record["deleted"],
            record["disabled_at"],
            record["disabled_reason"],
        )


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One event on its way to one endpoint, and what its attempts came to so far."""

    endpoint_id: str
    event_id: str
    posting_id: str
    event: bytes  # the ListingEvent as on jobpost.listing-events
    source: str  # listing-events or postings
    source_offset: int
    attempts: int
    next_attempt_at: int
    created_at: int
    first_attempt_at: int | None = None
    last_error: str | None = None
    replay_id: str | None = None

    @property
    def key(self) -> str:
        return delivery_key(self.endpoint_id, self.event_id)

    def to_avro(self) -> dict[str, Any]:
        return {
            "endpoint_id": self.endpoint_id,
            "event_id": self.event_id,
            "posting_id": self.posting_id,
            "event": self.event,
            "source": self.source,
            "source_offset": self.source_offset,
            "attempts": self.attempts,
            "first_attempt_at": self.first_attempt_at,
            "next_attempt_at": self.next_attempt_at,
            "last_error": self.last_error,
            "created_at": self.created_at,
            "replay_id": self.replay_id,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> WebhookDelivery:
        return WebhookDelivery(
            record["endpoint_id"],
            record["event_id"],
            record["posting_id"],
            record["event"],
            record["source"],
            record["source_offset"],
            record["attempts"],
            record["next_attempt_at"],
            record["created_at"],
            record["first_attempt_at"],
            record["last_error"],
            record["replay_id"],
        )


def delivery_key(endpoint_id: str, event_id: str) -> str:
    """The key of a delivery in `jobpost.webhook-pending` and `jobpost.webhooks.dlq`."""
    return f"{endpoint_id}/{event_id}"


@dataclass(frozen=True, slots=True)
class WebhookReplay:
    request_id: str
    endpoint_id: str
    since: int  # epoch millis
    requested_by: str
    requested_at: int

    def to_avro(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "endpoint_id": self.endpoint_id,
            "since": self.since,
            "requested_by": self.requested_by,
            "requested_at": self.requested_at,
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> WebhookReplay:
        return WebhookReplay(
            record["request_id"],
            record["endpoint_id"],
            record["since"],
            record["requested_by"],
            record["requested_at"],
        )
