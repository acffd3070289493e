"""Key-ordered delivery, without Kafka: one lane per posting, many postings at once.

A posting's records go to the board strictly one after another in offset order; records
of different postings are delivered concurrently. The limit counts board calls in flight,
not postings: a posting waiting for its next attempt holds no worker, so a hundred failing
postings never starve the healthy ones.

The scheduler is given a board, a clock, an `Outcomes` sink (where delivery states and
dead letters go; each call returns once Kafka acknowledged the write) and `DeliveryStates`
to read each posting's progress from (a dict in tests, the per-partition stores in the
runner), so it is unit-tested with fakes in milliseconds. The Kafka shell
(`consumers.runner`) feeds it records and commits an offset only once every record at or
below it is finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from prometheus_client import Counter

from consumers.errors import RejectedError, RetryableError
from consumers.retry import RetryPolicy
from schemas.deliveries import OUTCOME_OF_STATUS, delivery_event, delivery_state
from schemas.enums import DeliveryOutcome
from schemas.events import DeliveryEvent
from schemas.model import DeliveryState, DeliveryStatus, Destination, Op, PostingUpdate

log = logging.getLogger(__name__)

DELIVERIES = Counter(
    "jobpost_deliveries_total", "Delivery outcomes by destination", ["destination", "outcome"]
)
ATTEMPTS = Counter("jobpost_delivery_attempts_total", "Board calls by destination", ["destination"])


class Board(Protocol):
    async def upsert(self, update: PostingUpdate) -> None: ...

    async def close(self, update: PostingUpdate) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int: ...

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        """Return after `seconds`, or as soon as `wake` is set."""


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), seconds)


@dataclass(frozen=True)
class Item:
    """One record of a posting, as the scheduler sees it."""

    posting_id: str
    update: PostingUpdate | None  # None: a tombstone
    partition: int
    offset: int
    source: Any = None  # the Kafka message, for a dead letter

    @property
    def version(self) -> int:
        return -1 if self.update is None else self.update.version

    @property
    def deletes(self) -> bool:
        return self.update is not None and self.update.op == Op.DELETED


class DeliveryStates(Protocol):
    """Each posting's DeliveryState at this destination, as `Outcomes.record` last wrote
    it (or a restore found it). The scheduler only reads it."""

    def get(self, posting_id: str, /) -> DeliveryState | None: ...


class Outcomes(Protocol):
    async def record(self, item: Item, state: DeliveryState) -> None:
        """Write the posting's DeliveryState; return once it is acknowledged, and readable
        through the scheduler's `DeliveryStates`."""

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        """Write the record to the dead-letter topic; return once it is acknowledged."""

    def event(self, item: Item, event: DeliveryEvent) -> None:
        """Publish what an attempt came to (the posting's timeline), without waiting."""


@dataclass
class _Lane:
    records: deque[Item] = field(default_factory=deque)
    delete_arrived: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def superseded(self, item: Item) -> bool:
        return not item.deletes and any(r.deletes and r.version > item.version for r in self.records)


class LaneScheduler:
    def __init__(
        self,
        destination: Destination,
        board: Board,
        outcomes: Outcomes,
        states: DeliveryStates,
        on_finished: Callable[[Item], None],
        *,
        policy: RetryPolicy | None = None,
        clock: Clock | None = None,
        max_in_flight: int = 32,
    ) -> None:
        self.destination = destination
        self.board = board
        self.outcomes = outcomes
        self.on_finished = on_finished
        self.policy = policy or RetryPolicy()
        self.clock = clock or SystemClock()
        self.in_flight = asyncio.Semaphore(max_in_flight)
        self.states = states
        self.lanes: dict[str, _Lane] = {}

    @property
    def buffered(self) -> int:
        return sum(len(lane.records) for lane in self.lanes.values())

    def add(self, item: Item) -> None:
        lane = self.lanes.setdefault(item.posting_id, _Lane())
        lane.records.append(item)
        if item.deletes:
            lane.delete_arrived.set()
        if lane.task is None:
            lane.task = asyncio.create_task(self._work(item.posting_id, lane))

    def drop_partitions(self, partitions: set[int]) -> None:
        """Forget unfinished work of partitions this consumer no longer owns (their new
        owner starts from the committed offset)."""
        for posting_id, lane in list(self.lanes.items()):
            if lane.records and lane.records[0].partition in partitions:
                if lane.task:
                    lane.task.cancel()
                del self.lanes[posting_id]

    def close(self) -> None:
        for lane in self.lanes.values():
            if lane.task:
                lane.task.cancel()
        self.lanes.clear()

    async def _work(self, posting_id: str, lane: _Lane) -> None:
        try:
            while lane.records:
                item = lane.records[0]
                await self._deliver(item, lane)
                lane.records.popleft()
                self.on_finished(item)
        finally:
            lane.task = None
            if not lane.records and self.lanes.get(posting_id) is lane:
                del self.lanes[posting_id]

    async def _deliver(self, item: Item, lane: _Lane) -> None:
        update = item.update
        if update is None:
            return  # a tombstone: the DELETED version before it is what we act on
        state = self.states.get(item.posting_id) or DeliveryState(
            self.destination,
            item.posting_id,
            DeliveryStatus.PENDING,  # nothing recorded yet
        )
        delivered = state.delivered_version
        if delivered is not None and item.version <= delivered:
            DELIVERIES.labels(self.destination, "replayed").inc()
            return
        if state.status == DeliveryStatus.FAILED and state.pending_version == item.version:
            DELIVERIES.labels(self.destination, "replayed").inc()
            return  # dead-lettered already, before a restart or rebalance replayed it
        resuming = state.pending_version == item.version and state.status == DeliveryStatus.RETRYING
        attempts = state.attempts if resuming else 0
        first = state.first_attempt_at if resuming else None
        if resuming and state.next_attempt_at:
            await self._wait(lane, (state.next_attempt_at - self.clock.now_ms()) / 1000)
        while True:
            if lane.superseded(item):
                DELIVERIES.labels(self.destination, "superseded").inc()
                self._event(item, DeliveryOutcome.SKIPPED, attempts, "superseded by a later delete")
                return
            first = first or self.clock.now_ms()
            try:
                await self._call_board(item)
            except RejectedError as exc:
                await self._dead_letter(item, str(exc), attempts + 1, first)
                return
            except RetryableError as exc:
                attempts += 1
                elapsed = (self.clock.now_ms() - first) / 1000
                wait = self.policy.next_wait(attempts, elapsed, exc.retry_after_s)
                if wait is None:
                    await self._dead_letter(item, f"retries spent: {exc}", attempts, first)
                    return
                next_at = self.clock.now_ms() + int(wait * 1000)
                await self._record(item, DeliveryStatus.RETRYING, attempts, first, next_at, str(exc))
                log.info(
                    "attempt %d failed, next in %.1f s: %s", attempts, wait, exc, extra=self._context(item)
                )
                await self._wait(lane, wait)
                continue
            status = DeliveryStatus.CLOSED if item.deletes else DeliveryStatus.DELIVERED
            await self._record(item, status, attempts + 1, first, None, None)
            DELIVERIES.labels(self.destination, "delivered").inc()
            return

    async def _call_board(self, item: Item) -> None:
        """One attempt. Whatever goes wrong that the adapter did not classify (a bug, an
        answer nobody foresaw) is this attempt's failure, retried like any other."""
        assert item.update is not None
        async with self.in_flight:
            ATTEMPTS.labels(self.destination).inc()
            try:
                await (self.board.close(item.update) if item.deletes else self.board.upsert(item.update))
            except (RejectedError, RetryableError):
                raise
            except Exception as exc:
                log.exception("unexpected failure delivering", extra=self._context(item))
                raise RetryableError(f"unexpected {type(exc).__name__}: {str(exc)[:300]}") from exc

    async def _wait(self, lane: _Lane, seconds: float) -> None:
        """Sleep before the next attempt, cut short when a DELETE of the posting arrives."""
        if seconds <= 0:
            return
        lane.delete_arrived.clear()
        if any(r.deletes for r in list(lane.records)[1:]):
            return
        await self.clock.sleep(seconds, lane.delete_arrived)

    async def _record(
        self,
        item: Item,
        status: DeliveryStatus,
        attempts: int,
        first: int | None,
        next_at: int | None,
        error: str | None,
    ) -> None:
        done = status in (DeliveryStatus.DELIVERED, DeliveryStatus.CLOSED)
        before = self.states.get(item.posting_id)
        previous = before.delivered_version if before is not None else None
        state = delivery_state(
            self.destination,
            item.posting_id,
            status=status,
            delivered_version=item.version if done else previous,
            pending_version=None if done else item.version,
            attempts=attempts,
            first_attempt_at=first,
            next_attempt_at=next_at,
            last_error=error,
        )
        self._event(item, OUTCOME_OF_STATUS[status], attempts, error, next_at)
        await self.outcomes.record(item, state)

    def _event(
        self,
        item: Item,
        outcome: DeliveryOutcome,
        attempts: int,
        error: str | None,
        next_at: int | None = None,
    ) -> None:
        event = delivery_event(
            self.destination, item.posting_id, item.version, outcome, attempts,
            error=error, next_attempt_at=next_at, at=self.clock.now_ms(),
        )  # fmt: skip
        self.outcomes.event(item, event)

    async def _dead_letter(self, item: Item, error: str, attempts: int, first: int) -> None:
        DELIVERIES.labels(self.destination, "dead_lettered").inc()
        await self.outcomes.dead_letter(item, error, attempts, first)
        await self._record(item, DeliveryStatus.FAILED, attempts, first, None, error)

    def _context(self, item: Item) -> dict[str, Any]:
        return {"posting_id": item.posting_id, "version": item.version, "destination": self.destination}
