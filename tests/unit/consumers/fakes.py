"""Fakes for the lanes and the destination: a virtual clock, a board adapter, a token
source, an outcomes sink. Everything runs on one event loop in virtual milliseconds."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Sequence

from consumers.attempts import Attempts
from consumers.boards.base import (
    BoardListing,
    Delivered,
    ElementOutcome,
    JobAction,
    JobRef,
    Submitted,
    TaskOutcome,
    TaskState,
    TokenRefused,
)
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit, CircuitSettings
from consumers.destination.quota import DailyQuota
from consumers.destination.shared import SharedDestination
from consumers.items import Item
from consumers.job_rules import JobTerms
from consumers.job_watch import JobWatch
from consumers.lanes import LaneScheduler
from consumers.listing_changes import ListingChange
from consumers.outcomes import Outcomes
from consumers.retry import RetryPolicy, RetrySettings
from schemas.deliveries import DeliveryState
from schemas.events import DeliveryEvent
from schemas.model import Destination, Op, PostingUpdate
from tests import postings

SNAPSHOT = postings.posting(0)


def update(posting_id: str, version: int, op: str | None = None) -> PostingUpdate:
    kind = Op(op) if op else (Op.CREATED if version == 0 else Op.UPDATED)
    return PostingUpdate(posting_id, version, kind, f"{posting_id}:{version}", "r", SNAPSHOT, 1, 1)


def item(
    posting_id: str, version: int, op: str | None = None, offset: int | None = None, partition: int = 0
) -> Item:
    return Item(
        posting_id, update(posting_id, version, op), partition, offset if offset is not None else version
    )


class VirtualClock:
    """Virtual time: when every task is waiting, time jumps to the earliest sleeper's
    deadline (`run`). A sleep woken by its event returns at once."""

    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now
        self._sleepers: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self.now

    async def sleep(self, seconds: float, wake: asyncio.Event) -> None:
        if wake.is_set():
            return
        timer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + max(1, round(seconds * 1000)), next(self._seq), timer))
        woken = asyncio.ensure_future(wake.wait())
        try:
            await asyncio.wait({timer, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            timer.cancel()

    async def run(self, until: Callable[[], bool], limit_ms: int = 3_600_000) -> None:
        """Run the loop, advancing virtual time while nothing else can happen, until
        `until()` holds (or fail once `limit_ms` of virtual time passed)."""
        end = self.now + limit_ms
        while not until():
            for _ in range(30):  # let every ready task run to its next wait
                await asyncio.sleep(0)
            if until():
                return
            while self._sleepers and self._sleepers[0][2].done():
                heapq.heappop(self._sleepers)
            if not self._sleepers:
                raise AssertionError("nothing left to wait for, and the condition does not hold")
            deadline = self._sleepers[0][0]
            if deadline > end:
                raise AssertionError(f"still not done after {limit_ms} ms of virtual time")
            self.now = max(self.now, deadline)
            while self._sleepers and self._sleepers[0][0] <= self.now:
                _, _, timer = heapq.heappop(self._sleepers)
                if not timer.done():
                    timer.set_result(None)


class FakeAdapter:
    """A board: records every call; answers from `script` (a function of the updates, which
    may raise the whole-call exceptions) or `Delivered` for each; tasks end as `tasks` says."""

    def __init__(
        self,
        clock: VirtualClock,
        *,
        max_batch: int = 100,
        confirms: bool = False,
        latency_ms: int = 10,
        destination: Destination = Destination.LINKEDIN,
    ) -> None:
        self.clock = clock
        self.destination = destination
        self.max_batch = max_batch
        self.confirms = confirms
        self.latency_ms = latency_ms
        self.restates = confirms
        self.renews = confirms
        self.listings_per_call = 100
        self.tasks_per_call = 50
        self.calls: list[tuple[int, list[tuple[str, int]]]] = []  # (when, [(posting, version)])
        self.operations: list[tuple[str, int, str]] = []  # (posting, version, operation) of each element sent
        self.actions: list[JobAction] = []  # every element sent, in order
        self.polls: list[tuple[int, list[str]]] = []
        self.reads: list[tuple[int, list[str]]] = []  # status reads: (when, [posting])
        self.listing: dict[str, BoardListing] = {}  # what a status read answers, by posting
        self.tokens_seen: list[str] = []
        self.script: Callable[[Sequence[JobAction]], list[ElementOutcome]] | None = None
        self.poll_script: Callable[[Sequence[str]], dict[str, TaskOutcome]] | None = None
        self.refuse_tokens: set[str] = set()
        self.task_ends: dict[str, tuple[int, TaskOutcome]] = {}  # task -> (when, how it ends)
        self.task_delay_ms = 2_000
        self.task_outcome: Callable[[str, int], TaskOutcome] = lambda p, _v: TaskOutcome(
            TaskState.SUCCEEDED, job_id=f"urn:li:jobPosting:{p}"
        )
        self.in_flight = self.most_in_flight = 0
        self.call_errors: list[Exception] = []  # raised by the next calls, one each
        self.down: Exception | None = None  # raised by every call while set
        self.elements: dict[tuple[str, int], list[ElementOutcome]] = {}  # answered in turn, then the default

    async def send(self, actions: Sequence[JobAction], token: str) -> list[ElementOutcome]:
        await self._call(token)
        versions = [(a.posting_id, a.update.version if a.update else -1) for a in actions]
        self.calls.append((self.clock.now, versions))
        self.operations.extend((p, v, a.operation.value) for (p, v), a in zip(versions, actions, strict=True))
        self.actions.extend(actions)
        if self.down is not None:
            raise self.down
        if self.call_errors:
            raise self.call_errors.pop(0)
        if self.script is not None:
            return self.script(actions)
        answers: list[ElementOutcome] = []
        for posting_id, version in versions:
            planned = self.elements.get((posting_id, version))
            if planned:
                answers.append(planned.pop(0))
                continue
            if not self.confirms:
                answers.append(Delivered(f"job-{posting_id}"))
                continue
            task_id = f"task-{posting_id}-{version}-{len(self.calls)}"
            self.task_ends[task_id] = (
                self.clock.now + self.task_delay_ms,
                self.task_outcome(posting_id, version),
            )
            answers.append(Submitted(task_id))
        return answers

    async def listings(self, jobs: Sequence[JobRef], token: str) -> dict[str, BoardListing]:
        await self._call(token)
        self.reads.append((self.clock.now, [job.posting_id for job in jobs]))
        if self.down is not None:
            raise self.down
        return {
            job.posting_id: self.listing[job.posting_id] for job in jobs if job.posting_id in self.listing
        }

    def ops(self, posting_id: str) -> list[str]:
        """The operations the board was asked for the posting, in order."""
        return [operation for p, _, operation in self.operations if p == posting_id]

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        await self._call(token)
        self.polls.append((self.clock.now, list(task_ids)))
        if self.down is not None:
            raise self.down
        if self.poll_script is not None:
            return self.poll_script(task_ids)
        found = {}
        for task_id in task_ids:
            if task_id in self.task_ends:
                at, outcome = self.task_ends[task_id]
                found[task_id] = outcome if self.clock.now >= at else TaskOutcome(TaskState.IN_PROGRESS)
        return found

    async def _call(self, token: str) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            self.tokens_seen.append(token)
            await self.clock.sleep(self.latency_ms / 1000, asyncio.Event())
            if token in self.refuse_tokens:
                raise TokenRefused(f"401 for {token}")
        finally:
            self.in_flight -= 1

    def sent(self, posting_id: str) -> list[int]:
        """Versions of the posting the board was called with, in order (failed calls too)."""
        return [v for _, elements in self.calls for p, v in elements if p == posting_id]


class FakeTokens:
    def __init__(self) -> None:
        self.issued = 0
        self.expired: list[str] = []
        self.current = self._new()

    def _new(self) -> str:
        self.issued += 1
        return f"token-{self.issued}"

    async def token(self) -> str:
        await asyncio.sleep(0)
        return self.current

    def expire(self, token: str) -> None:
        self.expired.append(token)
        if token == self.current:
            self.current = self._new()


class FakeOutcomes:
    """The delivery log (`consumers.outcomes.DeliveryLog`): keeps what it is given, and (as
    the runner's store does) each posting's latest state where the lanes read it."""

    def __init__(self) -> None:
        self.latest: dict[str, DeliveryState] = {}
        self.states: list[DeliveryState] = []
        self.letters: list[tuple[str, int, str, int]] = []
        self.events: list[DeliveryEvent] = []
        self.changes: list[ListingChange] = []
        self.watch: JobWatch | None = None

    async def record(self, item: Item, state: DeliveryState) -> None:
        await asyncio.sleep(0)
        self.states.append(state)
        self.latest[state.posting_id] = state
        if self.watch is not None:
            self.watch.track(item.partition, state.posting_id, state.job)

    async def dead_letter(self, item: Item, error: str, attempts: int, first_attempt_ms: int) -> None:
        await asyncio.sleep(0)
        self.letters.append((item.posting_id, item.version, error, attempts))

    def event(self, item: Item, event: DeliveryEvent) -> None:
        self.events.append(event)

    def listing_change(self, item: Item, change: ListingChange) -> None:
        self.changes.append(change)

    def timeline(self, posting_id: str) -> list[tuple[int, str, int]]:
        """(version, outcome, attempt) of each event of the posting, in order."""
        return [(e.version, e.outcome, e.attempt) for e in self.events if e.posting_id == posting_id]


class Harness:
    """A lane scheduler over a real SharedDestination, with a fake board, tokens and sink."""

    def __init__(
        self,
        *,
        max_batch: int = 100,
        confirms: bool = False,
        records_per_minute: float | None = None,
        requests_per_minute: float | None = None,
        max_in_flight: int = 32,
        batch_wait_ms: float = 5,
        conflate: bool = False,
        retry: RetrySettings | None = None,
        circuit: CircuitSettings | None = None,
        task_timeout_s: float = 600,
        terms: JobTerms | None = None,
        quota: DailyQuota | None = None,
    ) -> None:
        self.clock = VirtualClock()
        self.board = FakeAdapter(self.clock, max_batch=max_batch, confirms=confirms)
        self.tokens = FakeTokens()
        self.outcomes = FakeOutcomes()
        self.finished: list[Item] = []
        self.destination = SharedDestination(
            self.board,
            self.tokens,
            RateBudget(records_per_minute, requests_per_minute),
            Circuit(circuit),
            max_in_flight=max_in_flight,
            batch_wait_ms=batch_wait_ms,
            task_poll_interval_s=1,
            task_timeout_s=task_timeout_s,
            clock=self.clock,
            quota=quota,
        )
        self.scheduler = LaneScheduler(
            Destination.LINKEDIN,
            Outcomes(Destination.LINKEDIN, self.outcomes, self.clock),
            Attempts(Destination.LINKEDIN, self.destination, self.clock),
            self.outcomes.latest,
            RetryPolicy(retry or RetrySettings(first_wait_s=1, max_wait_s=10)),
            clock=self.clock,
            conflate=conflate,
            terms=terms or JobTerms(restates=confirms),
        )
        self.jobs = JobWatch(
            self.destination, self.scheduler, self.outcomes.latest, self.scheduler.terms, self.clock
        )
        self.outcomes.watch = self.jobs

    def add(self, *items: Item) -> None:
        for one in items:
            self.scheduler.add(one).add_done_callback(
                lambda done, one=one: None if done.cancelled() else self.finished.append(one)
            )

    async def settle(self, finished: int, limit_ms: int = 3_600_000) -> None:
        await self.clock.run(lambda: len(self.finished) >= finished and not self.scheduler.lanes, limit_ms)

    def state(self, posting_id: str) -> DeliveryState:
        return self.outcomes.latest[posting_id]


def scenario(body: Callable[[Harness], object], **options: object) -> None:
    """Run `body(harness)` (a coroutine function) on a fresh loop with a started destination."""

    async def main() -> None:
        harness = Harness(**options)  # type: ignore[arg-type]
        harness.destination.start()
        watching = asyncio.create_task(harness.jobs.run())
        try:
            await body(harness)  # type: ignore[misc]
        finally:
            watching.cancel()
            harness.scheduler.close()
            await harness.destination.close()

    asyncio.run(asyncio.wait_for(main(), 20))
