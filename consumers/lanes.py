"""Key-ordered delivery, without Kafka: one lane per posting, many postings at once.

A posting's records go to the board strictly one after another in the order they arrived
(offset order of `jobpost.postings`, with its redrive requests in between); records of
different postings are delivered concurrently. A lane has at most one version with the
destination at a time, so the destination's batches never carry two versions of one
posting; the limit of calls in flight is the destination's, so a posting waiting for its
next attempt holds nothing and a hundred failing postings never starve the healthy ones.

The scheduler is given a destination (`delivery.Board`), a clock, an `Outcomes` sink
(where delivery states and dead letters go; each call returns once Kafka acknowledged the
write) and `DeliveryStates` to read each posting's progress from (a dict in tests, the
per-partition stores in the runner), so it is unit-tested with fakes in milliseconds.
`add` answers with a future that is done once the record is finished (delivered, skipped
or dead-lettered), which is when the consume loop (`runtime.consume_loop`) may commit its
offset. What one version goes through is `consumers.delivery`.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from consumers.clock import Clock, SystemClock
from consumers.delivery import Board, DeliveryStates, Outcomes, VersionDelivery
from consumers.destination.ticket import Ticket
from consumers.items import Item
from consumers.retry import RetryPolicy
from schemas.model import DeliveryStatus, Destination

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Lane:
    clock: Clock
    records: deque[Item] = field(default_factory=deque)
    finished: deque[asyncio.Future[None]] = field(default_factory=deque)  # one per record
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # a record arrived that may supersede
    task: asyncio.Task[None] | None = None
    ticket: Ticket | None = None  # the version with the destination now

    def later(self) -> list[Item]:
        return list(self.records)[1:]

    async def wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        self.changed.clear()
        await self.clock.sleep(seconds, self.changed)


class LaneScheduler:
    def __init__(
        self,
        destination: Destination,
        board: Board,
        outcomes: Outcomes,
        states: DeliveryStates,
        *,
        policy: RetryPolicy | None = None,
        clock: Clock | None = None,
        conflate: bool = False,
    ) -> None:
        self.clock = clock or SystemClock()
        self.conflate = conflate
        self.delivery = VersionDelivery(
            destination, board, outcomes, states, policy or RetryPolicy(), self.clock, conflate
        )
        self.lanes: dict[str, _Lane] = {}

    def without_clock(self) -> int:
        """Lanes whose posting's recorded state waits (paused, submitted, retrying) but names
        no time for what comes next (`next_attempt_at`): the lane's half of the watchdog."""
        waiting = (DeliveryStatus.PAUSED, DeliveryStatus.SUBMITTED, DeliveryStatus.RETRYING)
        count = 0
        for posting_id in self.lanes:
            state = self.delivery.states.get(posting_id)
            if state is not None and state.status in waiting and state.next_attempt_at is None:
                count += 1
        return count

    @property
    def buffered(self) -> int:
        return sum(len(lane.records) for lane in self.lanes.values())

    def add(self, item: Item) -> asyncio.Future[None]:
        """Queue the record in its posting's lane; the future is done once it is finished."""
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane = self.lanes.get(item.posting_id)
        if lane is None:
            lane = self.lanes[item.posting_id] = _Lane(self.clock)
        lane.records.append(item)
        lane.finished.append(finished)
        if item.request is None and (item.deletes or self.conflate):
            lane.changed.set()  # a waiting version may be superseded now
            if lane.ticket is not None:
                lane.ticket.notice.set()
        if lane.task is None:
            lane.task = asyncio.create_task(self._work(item.posting_id, lane))
        return finished

    def drop_partitions(self, partitions: set[int]) -> None:
        """Forget unfinished work of partitions this consumer no longer owns (their new
        owner starts from the committed offset)."""
        for posting_id, lane in list(self.lanes.items()):
            if lane.records and lane.records[0].partition in partitions:
                _stop(lane)
                del self.lanes[posting_id]

    def close(self) -> None:
        for lane in self.lanes.values():
            _stop(lane)
        self.lanes.clear()

    async def _work(self, posting_id: str, lane: _Lane) -> None:
        try:
            while lane.records:
                item = lane.records[0]
                try:
                    await self.delivery.deliver(item, lane)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bug must not kill the lane silently and hold its offsets forever
                    log.exception("a lane failed; the version is retried", extra={"posting_id": posting_id})
                    await self.clock.sleep(1.0, asyncio.Event())
                    continue
                lane.records.popleft()
                lane.finished.popleft().set_result(None)
        finally:
            lane.task = None
            if not lane.records and self.lanes.get(posting_id) is lane:
                del self.lanes[posting_id]


def _stop(lane: _Lane) -> None:
    """Cancel a lane's work: none of its records is finished."""
    if lane.task:
        lane.task.cancel()
    for finished in lane.finished:
        finished.cancel()
