"""What a version came to, written down at each step of its way (`steps.Step`): the posting's
DeliveryState, an event on its timeline, a dead letter, the deliveries counter, and a change
of the job at the board as an event for its employer (`listing_change`). Where it is written
is the board's `DeliveryLog` (Kafka: `consumers.delivery_log`; a fake in the unit tests),
which answers once Kafka acknowledged the write, so a version is finished only once what it
came to is kept.
"""

from __future__ import annotations

import logging
from typing import Protocol

from prometheus_client import Counter

from consumers.clock import Clock
from consumers.items import Item
from consumers.listing_changes import ListingChange, listing_changes
from consumers.steps import Step
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.events import DeliveryEvent
from schemas.model import Destination

log = logging.getLogger(__name__)

DELIVERIES = Counter(
    "jobpost_deliveries_total", "Delivery outcomes by destination", ["destination", "outcome"]
)


class DeliveryLog(Protocol):
    async def record(self, item: Item, state: DeliveryState) -> None:
        """Write the posting's DeliveryState; return once it is acknowledged, and readable
        through the lanes' `DeliveryStates`."""

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        """Write the version to the dead-letter topic; return once it is acknowledged."""

    def event(self, item: Item, event: DeliveryEvent) -> None:
        """Publish what an attempt came to (the posting's timeline), without waiting."""

    def listing_change(self, item: Item, change: ListingChange) -> None:
        """Publish a change of the job at the board for its employer, without waiting."""


class DeliveryStates(Protocol):
    """Each posting's DeliveryState at this destination, as the log last wrote it (or a
    restore found it). The lanes only read it."""

    def get(self, posting_id: str, /) -> DeliveryState | None: ...


class Outcomes:
    def __init__(self, destination: Destination, log: DeliveryLog, clock: Clock) -> None:
        self.destination = destination
        self.log = log
        self.clock = clock

    async def write(self, item: Item, step: Step) -> None:
        """What `step` says of the version: counted, dead-lettered (acknowledged first),
        its events on the timeline, the posting's new state (acknowledged)."""
        if step.counted is not None:
            DELIVERIES.labels(self.destination, step.counted).inc()
        progress, state = step.progress, step.state
        if step.letter is not None:
            first = (
                progress.first_attempt_at if progress.first_attempt_at is not None else self.clock.now_ms()
            )
            await self.log.dead_letter(item, step.letter, max(1, progress.attempts), first)
        for event in step.events:
            self.log.event(item, event)
        if state is None:
            return
        await self.log.record(item, state)
        for change in listing_changes(self.destination, item, step, self.clock.now_ms()):
            self.log.listing_change(item, change)
        if state.status == DeliveryStatus.RETRYING and state.next_attempt_at is not None:
            wait = (state.next_attempt_at - self.clock.now_ms()) / 1000
            context = {
                "posting_id": item.posting_id,
                "version": item.version,
                "destination": self.destination,
            }
            log.info(
                "attempt %d failed, next in %.1f s: %s",
                progress.attempts,
                wait,
                state.last_error,
                extra=context,
            )
