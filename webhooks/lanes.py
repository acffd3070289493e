"""Deliveries in order, without Kafka: one lane per (endpoint, posting), many at once.

A lane sends its events one at a time, in event order, the head retried on its schedule
until it is delivered or dead-lettered; the others wait behind it. Event order is the order
of each source (`jobpost.listing-events`, and `jobpost.postings` for `posting.accepted`) by
offset, the two interleaved by the events' times; an event that arrives after one the lane
has started on waits behind it. Lanes of other postings and other endpoints run
concurrently, within a limit of requests in flight per endpoint and overall, and a lane
waiting for its next attempt holds no slot: a dead or slow endpoint's lanes wait, and no
other endpoint's wait for them.

The scheduler is given the endpoints (`Endpoints`), a `Sender`, an `Outcomes` sink (each
call returns once Kafka acknowledged the write) and a clock, so it is unit-tested with fakes
in milliseconds. The Kafka shell is `webhooks.dispatcher`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Protocol

from schemas.listing_events import ListingEvent
from schemas.webhooks import WebhookDelivery, WebhookEndpoint
from webhooks import metrics
from webhooks.clock import Clock, SystemClock
from webhooks.schedule import RetrySchedule

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Queued:
    """One event for one endpoint, as a lane holds it."""

    delivery: WebhookDelivery
    event: ListingEvent
    partition: int

    @property
    def key(self) -> str:
        return self.delivery.key

    def precedes(self, other: Queued) -> bool:
        """Whether this event comes before `other` (both of one posting)."""
        if self.delivery.source == other.delivery.source:
            return self.delivery.source_offset < other.delivery.source_offset
        return self.event.at < other.event.at


class Verdict(StrEnum):
    DELIVERED = "delivered"  # a 2xx
    RETRY = "retry"  # 429, 5xx, 3xx, another 4xx, a timeout, no connection: attempted again
    GONE = "gone"  # 410: the endpoint is disabled


@dataclass(frozen=True)
class Attempt:
    verdict: Verdict
    detail: str  # the status, or what failed (timeout, connection refused)
    retry_after_s: float | None = None


class Endpoints(Protocol):
    def get(self, endpoint_id: str) -> WebhookEndpoint | None: ...


class Sender(Protocol):
    async def send(self, endpoint: WebhookEndpoint, queued: Queued) -> Attempt: ...


class Outcomes(Protocol):
    """Where a lane's outcomes go; each returns once Kafka acknowledged them."""

    async def retrying(self, queued: Queued) -> None:
        """The delivery's new attempt count and next attempt time."""

    async def finished(self, queued: Queued) -> None:
        """Delivered, or dropped (its endpoint was deleted): it waits no longer."""

    async def dead_lettered(self, queued: Queued, error: str) -> None:
        """Into the endpoint's dead letters; it waits no longer."""

    async def disable(self, endpoint: WebhookEndpoint, reason: str) -> None:
        """The endpoint answered 410 Gone: nothing more is sent to it."""


@dataclass(eq=False)
class _Lane:
    items: list[Queued] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    started: bool = False  # the head has been picked up: nothing goes before it any more

    def insert(self, queued: Queued) -> None:
        floor = 1 if self.items and (self.started or self.items[0].delivery.attempts) else 0
        at = len(self.items)
        while at > floor and queued.precedes(self.items[at - 1]):
            at -= 1
        self.items.insert(at, queued)
        if at == 0:
            self.wake.set()  # a new head: the lane looks at it now


class DeliveryScheduler:
    def __init__(
        self,
        endpoints: Endpoints,
        sender: Sender,
        outcomes: Outcomes,
        schedule: RetrySchedule,
        *,
        clock: Clock | None = None,
        max_in_flight: int = 256,
        max_in_flight_per_endpoint: int = 8,
    ) -> None:
        self.endpoints = endpoints
        self.sender = sender
        self.outcomes = outcomes
        self.schedule = schedule
        self.clock = clock or SystemClock()
        self.per_endpoint = max_in_flight_per_endpoint
        self.lanes: dict[tuple[str, str], _Lane] = {}
        self._queued: set[str] = set()  # keys of every delivery in a lane
        self._slots = asyncio.Semaphore(max_in_flight)
        self._endpoint_slots: dict[str, asyncio.Semaphore] = {}
        self._waiting: Counter[str] = Counter()  # endpoint -> deliveries in its lanes

    def add(self, queued: Queued) -> bool:
        """Queue a delivery in its lane; False when one with its key is queued already."""
        if queued.key in self._queued:
            return False
        self._queued.add(queued.key)
        lane_key = (queued.delivery.endpoint_id, queued.delivery.posting_id)
        lane = self.lanes.get(lane_key)
        if lane is None:
            lane = self.lanes[lane_key] = _Lane()
        lane.insert(queued)
        self._count(queued.delivery.endpoint_id, +1)
        if lane.task is None:
            lane.task = asyncio.create_task(self._work(lane_key, lane))
        return True

    def queued(self, key: str) -> bool:
        return key in self._queued

    def wake(self, endpoint_id: str) -> None:
        """The endpoint changed (deleted, disabled): its waiting lanes look again now."""
        for (endpoint, _), lane in self.lanes.items():
            if endpoint == endpoint_id:
                lane.wake.set()

    def waiting(self) -> dict[str, int]:
        """Deliveries queued per endpoint."""
        return {endpoint: n for endpoint, n in self._waiting.items() if n}

    def drop_partitions(self, partitions: set[int]) -> None:
        """Forget the lanes of partitions this member no longer owns (their next owner
        restores their deliveries from Kafka)."""
        for lane_key, lane in list(self.lanes.items()):
            if lane.items and lane.items[0].partition in partitions:
                self._forget(lane_key, lane)

    def close(self) -> None:
        for lane_key, lane in list(self.lanes.items()):
            self._forget(lane_key, lane)

    def _forget(self, lane_key: tuple[str, str], lane: _Lane) -> None:
        if lane.task is not None:
            lane.task.cancel()
        for queued in lane.items:
            self._queued.discard(queued.key)
            self._count(queued.delivery.endpoint_id, -1)
        lane.items.clear()
        del self.lanes[lane_key]

    async def _work(self, lane_key: tuple[str, str], lane: _Lane) -> None:
        try:
            while lane.items:
                try:
                    if await self._step(lane):
                        self._pop(lane)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bug must not stop the lane silently and hold its events forever
                    log.exception("a webhook lane failed; its head is attempted again in 1 s")
                    await self.clock.sleep(1.0, asyncio.Event())
        finally:
            lane.task = None
            if not lane.items and self.lanes.get(lane_key) is lane:
                del self.lanes[lane_key]

    def _pop(self, lane: _Lane) -> None:
        done = lane.items.pop(0)
        lane.started = False
        self._queued.discard(done.key)
        self._count(done.delivery.endpoint_id, -1)

    async def _step(self, lane: _Lane) -> bool:
        """One step of the lane's head; True once it waits no longer."""
        head = lane.items[0]
        endpoint = self.endpoints.get(head.delivery.endpoint_id)
        if endpoint is None or endpoint.deleted:
            await self.outcomes.finished(head)
            metrics.DELIVERIES.labels("dropped").inc()
            return True
        if endpoint.disabled_at is not None:
            await self._dead_letter(
                head, f"the endpoint is disabled: {endpoint.disabled_reason or '410 Gone'}"
            )
            return True
        due_s = (head.delivery.next_attempt_at - self.clock.now_ms()) / 1000
        if due_s > 0:
            lane.wake.clear()
            await self.clock.sleep(due_s, lane.wake)
            return False
        lane.started = True
        async with self._slot(endpoint.id):
            attempt = await self.sender.send(endpoint, head)
        return await self._settle(lane, endpoint, head, attempt)

    async def _settle(self, lane: _Lane, endpoint: WebhookEndpoint, head: Queued, attempt: Attempt) -> bool:
        now = self.clock.now_ms()
        if attempt.verdict == Verdict.DELIVERED:
            await self.outcomes.finished(head)
            metrics.DELIVERIES.labels("delivered").inc()
            metrics.EVENT_LAG.labels(endpoint.id).observe(max(0.0, (now - head.event.at) / 1000))
            return True
        failed = replace(
            head.delivery,
            attempts=head.delivery.attempts + 1,
            first_attempt_at=head.delivery.first_attempt_at or now,
            last_error=attempt.detail,
        )
        if attempt.verdict == Verdict.GONE:
            reason = f"{attempt.detail} Gone: the endpoint asked to be disabled"
            await self.outcomes.disable(endpoint, reason)
            metrics.DISABLED.inc()
            await self._dead_letter(replace(head, delivery=failed), reason)
            return True
        wait_s = self.schedule.wait_s(failed.attempts, attempt.retry_after_s)
        if wait_s is None:
            error = f"{failed.attempts} attempts failed, the last: {attempt.detail}"
            await self._dead_letter(replace(head, delivery=failed), error)
            return True
        lane.items[0] = head = replace(
            head, delivery=replace(failed, next_attempt_at=now + round(wait_s * 1000))
        )
        await self.outcomes.retrying(head)
        metrics.DELIVERIES.labels("retrying").inc()
        return False

    async def _dead_letter(self, queued: Queued, error: str) -> None:
        await self.outcomes.dead_lettered(queued, error)
        metrics.DELIVERIES.labels("dead_lettered").inc()

    @contextlib.asynccontextmanager
    async def _slot(self, endpoint_id: str) -> AsyncIterator[None]:
        own = self._endpoint_slots.get(endpoint_id)
        if own is None:
            own = self._endpoint_slots[endpoint_id] = asyncio.Semaphore(self.per_endpoint)
        async with own, self._slots:
            yield

    def _count(self, endpoint_id: str, change: int) -> None:
        self._waiting[endpoint_id] += change
        metrics.PENDING.labels(endpoint_id).set(self._waiting[endpoint_id])
