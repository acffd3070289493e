"""The one place the service's types become response models: one function per shape."""

from __future__ import annotations

from producer_api.http.models import DeletedOut, DeliveriesOut, DestinationProgress, PostingOut, SearchPage
from producer_api.http.ops_models import EventOut, LaneOut, TimelineOut, VersionOut
from producer_api.read.progress import Progress
from producer_api.read.timeline import STATE_OF_OUTCOME, Timeline
from producer_api.read.views import PostingView
from schemas.events import DeliveryEvent
from schemas.model import Posting
from schemas.search import SearchDocument


def posting(view: PostingView) -> PostingOut:
    text = view.posting or Posting("", "")  # a deleted posting keeps no text
    return PostingOut(
        id=view.id,
        version=view.version,
        title=text.title,
        description=text.description,
        notes=text.notes,
        location=text.location,
        apply_url=text.apply_url,
        status="deleted" if view.deleted else "active",
        last_update_time_millis=view.last_update_time_millis,
    )


def deleted(view: PostingView) -> DeletedOut:
    return DeletedOut(id=view.id, version=view.version)


def search_page(documents: list[SearchDocument], next_cursor: str | None) -> SearchPage:
    return SearchPage(items=[_found(d) for d in documents], next_cursor=next_cursor)


def _found(document: SearchDocument) -> PostingOut:
    return PostingOut(
        id=document.id,
        version=document.version,
        title=document.title,
        description=document.description,
        notes=document.notes,
        status=document.status,
        last_update_time_millis=document.last_update_time,
    )


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
    )
