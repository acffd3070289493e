"""A posting's timeline: its versions, and one lane per destination saying what each
version came to there. Pure: built from what the views hold, so unit-tested with plain
values.

A cell's state comes from the newest event of that version at that destination. A
version without an event is `pending`, unless the destination's delivery state shows it
(or a newer one) delivered: then it was delivered (events are informational and may lag
the state) or, if older, never sent (`skipped`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from producer_api.read.progress import Listing, listing_of
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryOutcome, DeliveryStatus, Destination, Op
from schemas.events import DeliveryEvent


class CellState(StrEnum):
    """What one version came to at one destination."""

    DELIVERED = "delivered"
    CLOSED = "closed"  # a delete delivered
    RETRYING = "retrying"
    DEAD_LETTERED = "dead_lettered"
    SKIPPED = "skipped"  # superseded by a later version or a delete, never sent
    PENDING = "pending"  # not tried yet
    SUBMITTED = "submitted"  # an asynchronous board accepted it, its task not ended yet
    PAUSED = "paused"  # held while the board as a whole is unavailable


STATE_OF_OUTCOME = {
    DeliveryOutcome.DELIVERED: CellState.DELIVERED,
    DeliveryOutcome.CLOSED: CellState.CLOSED,
    DeliveryOutcome.RETRYING: CellState.RETRYING,
    DeliveryOutcome.DEAD_LETTERED: CellState.DEAD_LETTERED,
    DeliveryOutcome.SKIPPED: CellState.SKIPPED,
    DeliveryOutcome.SUBMITTED: CellState.SUBMITTED,
    DeliveryOutcome.PAUSED: CellState.PAUSED,
}
# A lane has moved past a version in these states, and waits for the next message.
_SETTLED = {CellState.DELIVERED, CellState.DEAD_LETTERED, CellState.SKIPPED}


@dataclass(frozen=True)
class VersionLine:
    """One version of the posting, as its column heads it."""

    version: int
    op: Op
    at: int | None  # epoch millis it was accepted
    title: str


@dataclass(frozen=True)
class Cell:
    version: int
    state: CellState
    at: int | None = None  # epoch millis of the newest event
    attempts: int = 0
    error: str | None = None
    next_attempt_at: int | None = None  # while retrying


@dataclass(frozen=True)
class Lane:
    cells: tuple[Cell, ...]  # one per version line
    waiting_for: int | None  # the version the lane waits for, once it has caught up
    closed: bool  # the posting's delete was delivered here
    listing: Listing | None = None  # the job the board holds (its id, page, status)


@dataclass(frozen=True)
class Timeline:
    posting_id: str
    version: int
    deleted: bool
    versions: tuple[VersionLine, ...]
    lanes: dict[Destination, Lane]  # every destination, in the order of `Destination`
    events: tuple[DeliveryEvent, ...]  # in the order they happened


def build(
    posting_id: str,
    version: int,
    deleted: bool,
    versions: list[VersionLine],
    events: list[DeliveryEvent],
    states: dict[Destination, DeliveryState],
) -> Timeline:
    newest: dict[tuple[Destination, int], DeliveryEvent] = {}
    for event in events:  # in the order they happened: the last one wins
        newest[event.destination, event.version] = event
    lanes = {
        destination: _lane(destination, versions, newest, states.get(destination))
        for destination in Destination
    }
    return Timeline(posting_id, version, deleted, tuple(versions), lanes, tuple(events))


def _lane(
    destination: Destination,
    versions: list[VersionLine],
    newest: dict[tuple[Destination, int], DeliveryEvent],
    state: DeliveryState | None,
) -> Lane:
    cells = tuple(_cell(v.version, newest.get((destination, v.version)), state) for v in versions)
    last = cells[-1].state if cells else None
    waiting_for = versions[-1].version + 1 if last in _SETTLED else None
    listing = listing_of(state.job) if state is not None else None
    return Lane(cells, waiting_for, closed=last == CellState.CLOSED, listing=listing)


def _cell(version: int, event: DeliveryEvent | None, state: DeliveryState | None) -> Cell:
    if event is not None:
        retrying = event.outcome == DeliveryOutcome.RETRYING
        return Cell(
            version,
            STATE_OF_OUTCOME[event.outcome],
            event.at,
            event.attempt,
            event.error,
            event.next_attempt_at if retrying else None,
        )
    delivered = -1 if state is None or state.delivered_version is None else state.delivered_version
    if state is not None and version == delivered:
        reached = CellState.CLOSED if state.status == DeliveryStatus.CLOSED else CellState.DELIVERED
        return Cell(version, reached, state.updated_at, state.attempts)
    return Cell(version, CellState.SKIPPED if version < delivered else CellState.PENDING)


def fallback_versions(version: int, deleted: bool, title: str, at: int | None) -> list[VersionLine]:
    """For a posting written before versions were kept: its newest version alone."""
    op = Op.DELETED if deleted else Op.CREATED if version == 0 else Op.UPDATED
    return [VersionLine(version, op, at, title)]
