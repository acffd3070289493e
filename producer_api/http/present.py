"""The one place the service's types become response models: one function per shape."""

from __future__ import annotations

from producer_api.http.models import DeletedOut, DeliveriesOut, DestinationProgress, PostingOut, SearchPage
from producer_api.http.ops_models import CellOut, EventOut, LaneOut, TimelineOut, VersionOut
from producer_api.read.progress import Progress
from producer_api.read.timeline import STATE_OF_OUTCOME, Cell, Lane, Timeline, VersionLine
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
        destinations={p.destination: _progress(p) for p in progress},
    )


def _progress(progress: Progress) -> DestinationProgress:
    return DestinationProgress(
        delivered_version=progress.delivered_version,
        status=progress.status,
        attempts=progress.attempts,
        first_attempt_at=progress.first_attempt_at,
        next_attempt_at=progress.next_attempt_at,
        last_error=progress.last_error,
    )


def timeline(built: Timeline) -> TimelineOut:
    return TimelineOut(
        posting_id=built.posting_id,
        version=built.version,
        deleted=built.deleted,
        versions=[_version(v) for v in built.versions],
        lanes={destination: _lane(lane) for destination, lane in built.lanes.items()},
        events=[_event(e) for e in built.events],
    )


def _version(line: VersionLine) -> VersionOut:
    return VersionOut(version=line.version, op=line.op, at=line.at, title=line.title)


def _lane(lane: Lane) -> LaneOut:
    return LaneOut(cells=[_cell(c) for c in lane.cells], waiting_for=lane.waiting_for, closed=lane.closed)


def _cell(cell: Cell) -> CellOut:
    return CellOut(
        version=cell.version,
        state=cell.state,
        at=cell.at,
        attempts=cell.attempts,
        error=cell.error,
        next_attempt_at=cell.next_attempt_at,
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
