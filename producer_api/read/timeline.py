"""A posting's timeline: its versions, and one lane per destination saying what each
version came to there. Pure: built from what the views hold, so unit-tested with plain
values.

A cell's state comes from the newest event of that version at that destination. A
version without an event is `pending`, unless the destination's delivery state shows it
(or a newer one) delivered: then it was delivered (events are informational and may lag
the state) or, if older, never sent (`skipped`).
"""

from __future__ import annotations

from typing import Any

from schemas.enums import DeliveryOutcome, Destination, Op
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState, DeliveryStatus

# A lane has moved past a version in these states, and waits for the next message.
_SETTLED = {"delivered", "dead_lettered", "skipped"}


def build(
    posting_id: str,
    version: int,
    deleted: bool,
    versions: list[dict[str, Any]],
    events: list[DeliveryEvent],
    states: dict[Destination, DeliveryState],
) -> dict[str, Any]:
    newest: dict[tuple[Destination, int], DeliveryEvent] = {}
    for event in events:  # in the order they happened: the last one wins
        newest[event.destination, event.version] = event
    lanes = {
        destination.value: _lane(destination, versions, newest, states.get(destination))
        for destination in Destination
    }
    return {
        "posting_id": posting_id,
        "version": version,
        "deleted": deleted,
        "versions": versions,
        "lanes": lanes,
        "events": [e.to_json() for e in events],
    }


def _lane(
    destination: Destination,
    versions: list[dict[str, Any]],
    newest: dict[tuple[Destination, int], DeliveryEvent],
    state: DeliveryState | None,
) -> dict[str, Any]:
    cells = [_cell(v["version"], newest.get((destination, v["version"])), state) for v in versions]
    last = cells[-1]["state"] if cells else None
    closed = last == "closed"
    waiting_for = versions[-1]["version"] + 1 if last in _SETTLED else None
    return {"cells": cells, "waiting_for": waiting_for, "closed": closed}


def _cell(version: int, event: DeliveryEvent | None, state: DeliveryState | None) -> dict[str, Any]:
    if event is not None:
        return {
            "version": version,
            "state": event.outcome.lower(),
            "at": event.at,
            "attempts": event.attempt,
            "error": event.error,
            "next_attempt_at": event.next_attempt_at if event.outcome == DeliveryOutcome.RETRYING else None,
        }
    delivered = -1 if state is None or state.delivered_version is None else state.delivered_version
    cell: dict[str, Any] = {"version": version, "state": "pending", "at": None, "attempts": 0, "error": None,
                            "next_attempt_at": None}  # fmt: skip
    if state is not None and version == delivered:
        closed = state.status == DeliveryStatus.CLOSED
        cell.update(state="closed" if closed else "delivered", at=state.updated_at, attempts=state.attempts)
    elif version < delivered:
        cell["state"] = "skipped"
    return cell


def fallback_versions(version: int, deleted: bool, title: str, at: int | None) -> list[dict[str, Any]]:
    """For a posting written before versions were kept: its newest version alone."""
    op = Op.DELETED if deleted else Op.CREATED if version == 0 else Op.UPDATED
    return [{"version": version, "op": op.value, "at": at, "title": title}]
