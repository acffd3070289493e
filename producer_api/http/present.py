"""The one place the service's types become response models: one function per shape."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from producer_api.http.models import (
    DeletedOut,
    DeliveriesOut,
    DestinationProgress,
    LocationOut,
    PostingOut,
    SalaryOut,
    SearchPage,
)
from producer_api.http.ops_models import EventOut, LaneOut, TimelineOut, VersionOut
from producer_api.http.posting_body import expires_at
from producer_api.read.progress import Progress
from producer_api.read.timeline import STATE_OF_OUTCOME, Timeline
from producer_api.read.views import PostingView
from schemas.events import DeliveryEvent
from schemas.model import Posting, Salary
from schemas.search import SearchDocument


def posting(view: PostingView) -> PostingOut:
    text = view.posting or Posting("", "", boards=())  # a deleted posting keeps no text
    return PostingOut(
        id=view.id,
        version=view.version,
        title=text.title,
        description=text.description,
        description_format=_lower(text.description_format),
        notes=text.notes,
        locations=[
            LocationOut(city=p.city, region=p.region, postal_code=p.postal_code, country=p.country)
            for p in text.locations
        ],
        workplace=_lower(text.workplace),
        employment_type=_lower(text.employment_type),
        salary=None if text.salary is None else _salary(text.salary),
        apply_url=text.apply_url,
        expires_at=expires_at(text.expires_at),
        boards=[_lower(b) for b in text.boards],
        location=text.location,
        status="deleted" if view.deleted else "active",
        last_update_time_millis=view.last_update_time_millis,
        employer=view.employer,
    )


def _salary(salary: Salary) -> SalaryOut:
    return SalaryOut(min=salary.min, max=salary.max, currency=salary.currency, period=_lower(salary.period))


def _lower(symbol: StrEnum) -> Any:
    """An Avro enum symbol as the API spells it (ON_SITE -> on_site)."""
    return symbol.value.lower()


def deleted(view: PostingView) -> DeletedOut:
    return DeletedOut(id=view.id, version=view.version)


def search_page(documents: list[SearchDocument], next_cursor: str | None) -> SearchPage:
    return SearchPage(items=[_found(d) for d in documents], next_cursor=next_cursor)


def _found(document: SearchDocument) -> PostingOut:
    """A hit, as the posting reads on every other route."""
    deleted = document.status == "deleted"
    view = PostingView(
        document.id,
        document.version,
        deleted,
        None if deleted else document.posting,
        document.last_update_time,
        document.employer,
    )
    return posting(view)


def deliveries(view: PostingView, progress: list[Progress]) -> DeliveriesOut:
    return DeliveriesOut(
        posting_id=view.id,
        version=view.version,
        destinations={
            p.destination: DestinationProgress.model_validate(p, from_attributes=True) for p in progress
        },
    )


def timeline(built: Timeline) -> TimelineOut:
    # Versions, lanes and cells have the response models' fields: read them as they are.
    return TimelineOut(
        posting_id=built.posting_id,
        version=built.version,
        deleted=built.deleted,
        versions=[VersionOut.model_validate(line, from_attributes=True) for line in built.versions],
        lanes={d: LaneOut.model_validate(lane, from_attributes=True) for d, lane in built.lanes.items()},
        events=[_event(e) for e in built.events],
    )


def _event(event: DeliveryEvent) -> EventOut:
    return EventOut(
        posting_id=event.posting_id,
        version=event.version,
        destination=event.destination,
        attempt=event.attempt,
        outcome=STATE_OF_OUTCOME[event.outcome],
        error=event.error,
        next_attempt_at=event.next_attempt_at,
        at=event.at,
        task_id=event.task_id,
        request_id=event.request_id,
    )
