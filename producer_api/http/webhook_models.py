"""The HTTP shapes of webhooks: an endpoint as a client registers it and reads it back, a
rotation, a replay, the dead letters."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field

from schemas.listing_events import EVENT_TYPES
from schemas.webhooks import EVERY_EVENT, WebhookEndpoint, unknown_event_filter

EVENT_FILTERS = (EVERY_EVENT, "posting.*", "listing.*", *EVENT_TYPES)


def _known_filter(entry: str) -> str:
    if unknown_event_filter(entry):
        raise ValueError(f"names no event type: one of {', '.join(EVENT_FILTERS)}")
    return entry


EventFilter = Annotated[
    str,
    Field(min_length=1, max_length=100, json_schema_extra={"enum": list(EVENT_FILTERS)}),
    AfterValidator(_known_filter),
]


class WebhookIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"url": "https://ats.example/hooks/jobpost", "events": ["listing.*"]}]
        },
    )

    url: str = Field(
        min_length=1,
        max_length=2000,
        pattern=r"^https?://[^\s]+$",
        description="where events are POSTed: https (plain http to this machine only where the API "
        "allows it, for development)",
    )
    events: list[EventFilter] = Field(
        default_factory=lambda: [EVERY_EVENT],
        min_length=1,
        max_length=len(EVENT_FILTERS),
        description="event types, families (`listing.*`) or `*` (every type, later ones too; the default)",
    )


class WebhookOut(BaseModel):
    id: str
    employer: str
    url: str
    events: list[str]
    created_at: int = Field(description="epoch millis; events that happened before it are not delivered")
    status: Literal["enabled", "disabled"]
    disabled_at: int | None = Field(description="epoch millis the endpoint answered 410 Gone")
    disabled_reason: str | None
    previous_secret_until: int | None = Field(
        description="after a rotation: until when (epoch millis) the previous secret signs beside the new one"
    )

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> WebhookOut:
        ends = [s.not_after for s in endpoint.secrets if s.not_after is not None]
        return cls(
            id=endpoint.id,
            employer=endpoint.employer,
            url=endpoint.url,
            events=list(endpoint.events),
            created_at=endpoint.created_at,
            status="enabled" if endpoint.disabled_at is None else "disabled",
            disabled_at=endpoint.disabled_at,
            disabled_reason=endpoint.disabled_reason,
            previous_secret_until=max(ends) if ends else None,
        )


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(
        description="`whsec_...`, the Standard Webhooks signing secret: shown this once, never again"
    )


class WebhookDeletedOut(BaseModel):
    id: str
    deleted: Literal[True]


class WebhooksOut(BaseModel):
    webhooks: list[WebhookOut]


class RotatedOut(BaseModel):
    id: str
    secret: str = Field(description="the new `whsec_...` secret: shown this once, never again")
    previous_secret_until: int = Field(
        description="epoch millis until which the previous secret signs too (each delivery carries "
        "both signatures)"
    )


class ReplayIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"since": "2026-12-01T09:00:00Z"}]}
    )

    since: AwareDatetime = Field(
        description="RFC 3339 with its offset: the endpoint's events that happened at or after it are "
        "delivered again, each with its own webhook-id (up to 7 days back)"
    )


class ReplayOut(BaseModel):
    request_id: str
    endpoint_id: str
    since: str = Field(description="RFC 3339, UTC")


class LetterOut(BaseModel):
    event_id: str = Field(description="the webhook-id its deliveries carried")
    type: str | None
    posting_id: str
    version: int | None
    board: str | None
    attempts: int
    error: str = Field(description="why it was given up: the last attempt's answer, or the endpoint disabled")
    first_attempt_at: int | None
    dead_lettered_at: int
    event: dict[str, Any] | None = Field(description="the webhook's body, as it was sent")


class LettersOut(BaseModel):
    letters: list[LetterOut] = Field(description="newest first")
