"""Key-ordered delivery, without Kafka: one lane per posting, many postings at once.

A posting's records go to the board strictly one after another in the order they arrived
(offset order of `jobpost.postings`, with its redrive requests in between); records of
different postings are delivered concurrently. A lane has at most one version with the
destination at a time, so the destination's batches never carry two versions of one posting;
the limit of calls in flight is the destination's, so a posting waiting for its next attempt
holds nothing and a hundred failing postings never starve the healthy ones.

Each version's way is a short loop: the lane's rules (`consumers.rules`, pure) say where it
starts and what each piece of news makes of it, what that comes to is written down
(`consumers.outcomes`), and its attempts go through the destination (`consumers.attempts`).
The unit tests run it with a fake board, a fake log and a virtual clock, milliseconds each.
`add` answers with a future that is done once the record is finished (delivered, skipped or
dead-lettered), which is when the consume loop (`runtime.consume_loop`) may commit its
offset. A lane also keeps the answer to the one question only it can: whether a record queued
behind the one being delivered supersedes it (`superseded_by`), judged again whenever
its records change and read by its attempts, which call nothing of the lane's.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from consumers.attempts import Attempts
from consumers.clock import Clock, SystemClock
from consumers.destination.ticket import Ticket
from consumers.items import Item
from consumers.job_rules import JobTerms
from consumers.outcomes import DeliveryStates, Outcomes
from consumers.retry import RetryPolicy
from consumers.rules import next_step
from consumers.steps import News, Step
from schemas.enums import DeliveryStatus, Op
from schemas.model import Destination

log = logging.getLogger(__name__)


@dataclass(eq=False)
class _Lane:
    records: deque[Item] = field(default_factory=deque)
    finished: deque[asyncio.Future[None]] = field(default_factory=deque)  # one per record
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # a record arrived that may supersede
    task: asyncio.Task[None] | None = None
    ticket: Ticket | None = None  # the version with the destination now
    superseded: str | None = None  # why the record delivered is not worth sending any more

    def later(self) -> list[Item]:
        return list(self.records)[1:]

    def judge(self) -> None:
        """Whether a record queued behind the one delivered supersedes it, after every change
        of the records (`superseded`, which its attempts read)."""
        newer = superseded_by(self.records[0], self.later()) if self.records else None
        if newer is None:
            self.superseded = None
        elif any(record.deletes and record.version == newer for record in self.later()):
            self.superseded = "superseded by a later delete"
        else:
            self.superseded = f"superseded by v{newer}"


class LaneScheduler:
    def __init__(
        self,
        destination: Destination,
        outcomes: Outcomes,
        attempts: Attempts,
        states: DeliveryStates,
        policy: RetryPolicy,
        *,
        clock: Clock | None = None,
        conflate: bool = False,
        terms: JobTerms | None = None,
    ) -> None:
        self.destination = destination
        self.terms = terms or JobTerms()
        self.outcomes = outcomes
        self.attempts = attempts
        self.states = states
        self.policy = policy
        self.clock = clock or SystemClock()
        self.conflate = conflate
        self.lanes: dict[str, _Lane] = {}

    def without_clock(self) -> int:
        """Lanes whose posting's recorded state waits (paused, submitted, retrying) but names
        no time for what comes next (`next_attempt_at`): the lane's half of the watchdog."""
        waiting = (DeliveryStatus.PAUSED, DeliveryStatus.SUBMITTED, DeliveryStatus.RETRYING)
        count = 0
        for posting_id in self.lanes:
            state = self.states.get(posting_id)
            if state is not None and state.status in waiting and state.next_attempt_at is None:
                count += 1
        return count

    def add(self, item: Item) -> asyncio.Future[None]:
        """Queue the record in its posting's lane; the future is done once it is finished."""
        finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        lane = self.lanes.get(item.posting_id)
        if lane is None:
            lane = self.lanes[item.posting_id] = _Lane()
        lane.records.append(item)
        lane.finished.append(finished)
        lane.judge()
        if item.request is None and item.deletes:
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
                    await self._deliver(item, lane)
                except asyncio.CancelledError:
                    raise
                except Exception:  # a bug must not kill the lane silently and hold its offsets forever
                    log.exception("a lane failed; the version is retried", extra={"posting_id": posting_id})
                    self.attempts.abandon(lane)
                    await self.clock.sleep(1.0, asyncio.Event())
                    continue
                lane.records.popleft()
                lane.judge()
                lane.finished.popleft().set_result(None)
        finally:
            self.attempts.abandon(lane)  # cancelled: its version is taken back from the destination
            lane.task = None
            if not lane.records and self.lanes.get(posting_id) is lane:
                del self.lanes[posting_id]

    async def _deliver(self, item: Item, lane: _Lane) -> None:
        """One version's way: the rules say where it starts and what each piece of news of
        its attempts makes of it; each step is written down before the next is taken."""
        if item.update is None and item.news is None:
            return  # a tombstone: the DELETED version before it is what we act on
        step: Step | None = None
        news: News | None = None
        while True:
            before = self.states.get(item.posting_id)
            now = self.clock.now_ms()
            step = next_step(
                self.destination,
                item,
                before,
                lane.later(),
                self.policy,
                now,
                terms=self.terms,
                step=step,
                news=news,
                conflate=self.conflate,
            )
            await self.outcomes.write(item, step)
            if not step.go:
                return
            assert step.action is not None
            news = await self.attempts.next(step.action, lane, step.progress)


def _stop(lane: _Lane) -> None:
    """Cancel a lane's work: none of its records is finished."""
    if lane.task:
        lane.task.cancel()
    for finished in lane.finished:
        finished.cancel()


def superseded_by(item: Item, later: Iterable[Item]) -> int | None:
    """The newest later version that makes `item` pointless to send, even once taken up: a
    DELETE of the posting (the board ends with the posting closed), any newer version when
    `item` is a redrive. (A newer version queued behind one not yet taken up is the rules'
    question: `consumers.rules.conflated`.) A
    DELETED version is never superseded, nor is the CREATED one: a board updates and
    closes only a job it created (LinkedIn refuses the UPDATE or CLOSE of a job it never
    created, which dead-lettered a posting created and deleted while its consumer was
    down, found by `make chaos`). None: send it."""
    created = item.update is not None and item.update.op == Op.CREATED and item.request is None
    if item.deletes or created:
        return None
    newer = item.request is not None
    versions = [
        r.version
        for r in later
        if r.request is None and r.update is not None and r.version > item.version and (newer or r.deletes)
    ]
    return max(versions) if versions else None
