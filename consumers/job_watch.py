"""The jobs a board holds open for this member's postings, followed between versions: their
status read back from the board (LinkedIn's job posting status, Indeed's job post status)
while not final, and now and then once live, so a job the board closes or rejects on its own
shows within one interval; the posting's expiry, which closes the job at that time; the
board's lifetime (LinkedIn's 180 days), renewed ahead of its end.

What it learns goes into the posting's lane as news (`items.JobNews`), never into the state
directly: the lane is the only writer of a posting's DeliveryState, so news is written in
order with the versions. What is due comes from each state the lane writes (and those a
restore finds: `consumers.delivery_states`), so it is durable across restarts: an expiry missed
while the consumer was down closes the job as soon as it is back.

Status reads go through the destination (`SharedDestination.read_listings`): within the
request budget, through the circuit, many jobs a call. A read that changes nothing is not
written: the next one is due an interval later (in memory).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from dataclasses import replace

from consumers.boards.base import BoardListing, JobRef
from consumers.clock import Clock
from consumers.destination.shared import SharedDestination
from consumers.items import JobNews, NewsKind, news_item
from consumers.job_rules import Due, JobTerms, due, listed
from consumers.lanes import LaneScheduler
from consumers.outcomes import DeliveryStates
from schemas.deliveries import BoardJob
from schemas.enums import ListingStatus

log = logging.getLogger(__name__)

# Expiry or renewal news that left the job as it was (the board could not be reached within
# the budget): due again this much later.
AGAIN_MS = 60_000
IDLE_S = 60.0  # nothing due: look again at least this often


class JobWatch:
    def __init__(
        self,
        destination: SharedDestination,
        lanes: LaneScheduler,
        states: DeliveryStates,
        terms: JobTerms,
        clock: Clock,
    ) -> None:
        self.destination = destination
        self.lanes = lanes
        self.states = states
        self.terms = terms
        self.clock = clock
        self.wake = asyncio.Event()
        self._due: dict[str, tuple[int, Due]] = {}  # posting -> (partition, what is due when)
        self._heap: list[tuple[int, int, str, NewsKind]] = []
        self._seq = itertools.count()
        self._queued: set[tuple[str, NewsKind]] = set()  # news in a lane now

    def __len__(self) -> int:
        return len(self._due)

    def track(self, partition: int, posting_id: str, job: BoardJob | None) -> None:
        """What is due for the posting's job, as its state now has it."""
        found = due(job, self.terms) if job is not None else Due()
        if found == Due():
            self._due.pop(posting_id, None)
            return
        if self._due.get(posting_id) == (partition, found):
            return
        self._due[posting_id] = (partition, found)
        for kind, at in self._times(found):
            self._push(at, posting_id, kind)
        self.wake.set()

    def forget(self, partitions: set[int]) -> None:
        """The partitions went to another member: their jobs are its to follow."""
        for posting_id, (partition, _) in list(self._due.items()):
            if partition in partitions:
                del self._due[posting_id]

    async def run(self) -> None:
        """Act on what is due, until cancelled."""
        while True:
            self.wake.clear()
            now = self.clock.now_ms()
            checks: list[str] = []
            for posting_id, kind in self._take(now):
                if kind == NewsKind.STATUS:
                    checks.append(posting_id)
                else:
                    self._tell(posting_id, kind, JobNews(kind))
            if checks:
                await self._read(checks)
                continue
            wait_s = IDLE_S if not self._heap else max(0.0, (self._heap[0][0] - self.clock.now_ms()) / 1000)
            await self.clock.sleep(min(wait_s, IDLE_S), self.wake)

    def _times(self, found: Due) -> list[tuple[NewsKind, int]]:
        times = [
            (NewsKind.STATUS, found.check),
            (NewsKind.EXPIRE, found.expire),
            (NewsKind.RENEW, found.renew),
        ]
        return [(kind, at) for kind, at in times if at is not None]

    def _push(self, at: int, posting_id: str, kind: NewsKind) -> None:
        heapq.heappush(self._heap, (at, next(self._seq), posting_id, kind))

    def _take(self, now: int) -> list[tuple[str, NewsKind]]:
        """What is due now: each (posting, kind) once, those still due as their state says;
        at most a call's worth of status reads."""
        taken: list[tuple[str, NewsKind]] = []
        checks = 0
        seen: set[tuple[str, NewsKind]] = set()
        while self._heap and self._heap[0][0] <= now:
            at, _, posting_id, kind = self._heap[0]
            if kind == NewsKind.STATUS and checks >= self.destination.adapter.listings_per_call:
                break
            heapq.heappop(self._heap)
            key = (posting_id, kind)
            if key in seen or key in self._queued or not self._still_due(posting_id, kind, at):
                continue
            seen.add(key)
            taken.append(key)
            checks += kind == NewsKind.STATUS
        return taken

    def _still_due(self, posting_id: str, kind: NewsKind, at: int) -> bool:
        entry = self._due.get(posting_id)
        if entry is None:
            return False
        _, found = entry
        scheduled = {NewsKind.STATUS: found.check, NewsKind.EXPIRE: found.expire, NewsKind.RENEW: found.renew}
        return scheduled[kind] is not None and scheduled[kind] <= at  # type: ignore[operator]

    def _later(self, posting_id: str, kind: NewsKind, at: int) -> None:
        """Due again at `at` (in memory: the state is not written for it)."""
        entry = self._due.get(posting_id)
        if entry is None:
            return
        partition, found = entry
        moved = {
            NewsKind.STATUS: replace(found, check=at),
            NewsKind.EXPIRE: replace(found, expire=at),
            NewsKind.RENEW: replace(found, renew=at),
        }[kind]
        self._due[posting_id] = (partition, moved)
        self._push(at, posting_id, kind)

    def _tell(self, posting_id: str, kind: NewsKind, news: JobNews) -> None:
        """Queue the news in the posting's lane; once the lane is done with it, what is due
        is what the state it wrote says (unchanged: due again later)."""
        entry = self._due.get(posting_id)
        if entry is None:
            return
        partition, before = entry
        key = (posting_id, kind)
        self._queued.add(key)
        finished = self.lanes.add(news_item(posting_id, partition, news))

        def done(_: asyncio.Future[None]) -> None:
            self._queued.discard(key)
            now = self.clock.now_ms()
            if self._due.get(posting_id) == (partition, before) and kind != NewsKind.STATUS:
                self._later(posting_id, kind, now + AGAIN_MS)
            self.wake.set()

        finished.add_done_callback(done)

    async def _read(self, posting_ids: list[str]) -> None:
        """Read the jobs' statuses back; a job whose status says something new goes to its
        lane, the others are read again an interval later."""
        jobs: dict[str, BoardJob] = {}
        for posting_id in posting_ids:
            state = self.states.get(posting_id)
            if state is not None and state.job is not None:
                jobs[posting_id] = state.job
        refs = [JobRef(posting_id, job.job_id) for posting_id, job in jobs.items()]
        found, wait_ms = await self.destination.read_listings(refs) if refs else ({}, 0)
        now = self.clock.now_ms()
        for posting_id, job in jobs.items():
            listing = None if found is None else found.get(posting_id)
            if listing is not None and self._news(job, listing, now):
                self._tell(posting_id, NewsKind.STATUS, JobNews(NewsKind.STATUS, listing))
                continue
            if found is None:
                self._later(posting_id, NewsKind.STATUS, now + max(wait_ms, 1))
            else:
                interval = (
                    self.terms.check_live_ms
                    if job.status == ListingStatus.LIVE
                    else self.terms.check_received_ms
                )
                self._later(posting_id, NewsKind.STATUS, now + interval)

    def _news(self, job: BoardJob, listing: BoardListing, now: int) -> bool:
        """Whether what the board said changes the job (beyond when it is read next)."""
        after = listed(job, listing, now, self.terms)
        return replace(after, next_check_at=None, since=None) != replace(job, next_check_at=None, since=None)
