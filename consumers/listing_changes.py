"""A change of a posting's job at a board, as its employer is told of it: the type of event
(the webhooks' `listing.*` types: /work/notes/webhooks-design.md and CONTRACT.md's
"Webhooks"), the posting, the version, the board, and the listing as `GET
/postings/{id}/deliveries` shows it. Made from each step the lane writes (`steps.Step`):
every change of the job's status, a version dead-lettered, a redrive taken up."""

from __future__ import annotations

from dataclasses import dataclass

from consumers.items import Item
from consumers.steps import Step
from schemas.deliveries import BoardJob
from schemas.enums import ListingStatus
from schemas.model import Destination

TYPES = {
    ListingStatus.SUBMITTED: "listing.submitted",
    ListingStatus.RECEIVED: "listing.received",
    ListingStatus.LIVE: "listing.live",
    ListingStatus.CLOSED: "listing.closed",
    ListingStatus.CLOSED_BY_BOARD: "listing.closed_by_board",
    ListingStatus.EXPIRED: "listing.expired",
    ListingStatus.REJECTED: "listing.refused",
}
DEAD_LETTERED = "listing.dead_lettered"
REDRIVEN = "listing.redriven"


@dataclass(frozen=True)
class ListingChange:
    type: str
    employer: str | None
    posting_id: str
    version: int
    board: Destination
    job: BoardJob | None  # the job as it is now (its id, page, status, reason, since)
    problem: str | None  # why the version was refused, for a dead letter
    at: int


def listing_changes(destination: Destination, item: Item, step: Step, now: int) -> list[ListingChange]:
    """The events the step makes for the employer, in the order they happened."""
    state = step.state
    if state is None:
        return []
    employer = (
        item.update.employer if item.update is not None else (state.job.employer if state.job else None)
    )
    version = item.version if item.update is not None else (state.delivered_version or 0)
    changes: list[ListingChange] = []

    def add(kind: str, job: BoardJob | None, problem: str | None = None) -> None:
        changes.append(
            ListingChange(kind, employer, item.posting_id, version, destination, job, problem, now)
        )

    if item.request is not None and not step.progress.redrive_told:
        step.progress.redrive_told = True  # once per redrive, with the first state it writes
        add(REDRIVEN, state.job)
    if step.listing is not None and step.listing.status is not None:
        add(TYPES[step.listing.status], step.listing)
    if step.letter is not None:
        add(DEAD_LETTERED, state.job, step.letter)
    return changes
