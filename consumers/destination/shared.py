"""The destination: one per board per process, what every lane of that board shares, as the
lanes see it. A lane hands its posting's next version to `submit` and gets a `Ticket`; the
sending (`sending.py`) carries it to the board in a batch with other postings' versions and
settles it with its own element's outcome; for an asynchronous board the lane then waits in
`confirm` for its task (`confirming.py`). Both call the board through one `BoardAccess`
(`access.py`: the token, the rate budget, the circuit), and neither knows the other: a change
of the circuit that one of them caused wakes both.

The job watch (`consumers.job_watch`) reads the board's status of jobs back through the
same access (`read_listings`): within the same budget and circuit, with the same token.

The lanes keep their order and their retry budgets (`consumers.lanes`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from consumers.boards.base import (
    BoardAdapter,
    BoardDown,
    BoardListing,
    CallFailed,
    JobAction,
    JobRef,
    TaskOutcome,
    Throttled,
    TokenSource,
)
from consumers.clock import Clock, SystemClock
from consumers.destination import metrics
from consumers.destination.access import BoardAccess
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.destination.confirming import TaskPoller
from consumers.destination.quota import DailyQuota
from consumers.destination.sending import Sending
from consumers.destination.ticket import Ticket

log = logging.getLogger(__name__)
# A status read that could not be made now is tried again this much later at the earliest.
LISTINGS_RETRY_MS = 1_000


class SharedDestination:
    def __init__(
        self,
        adapter: BoardAdapter,
        tokens: TokenSource,
        budget: RateBudget,
        circuit: Circuit,
        *,
        max_in_flight: int = 32,
        batch_wait_ms: float = 5.0,
        task_poll_interval_s: float = 2.0,
        task_timeout_s: float = 600.0,
        clock: Clock | None = None,
        quota: DailyQuota | None = None,
    ) -> None:
        self.name = adapter.destination
        self.adapter = adapter
        self.clock = clock or SystemClock()
        self.access = BoardAccess(self.name, tokens, budget, circuit, quota)
        self.circuit = circuit
        self.sending = Sending(
            adapter, self.access, self.clock, max_in_flight=max_in_flight, batch_wait_ms=batch_wait_ms
        )
        self.tasks = (
            TaskPoller(adapter, self.access, self.clock, task_poll_interval_s, task_timeout_s)
            if adapter.confirms
            else None
        )
        self._running: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._running.append(asyncio.create_task(self.sending.dispatch()))
        if self.tasks is not None:
            self._running.append(asyncio.create_task(self.tasks.poll()))

    async def close(self) -> None:
        for task in self._running:
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)

    def submit(self, action: JobAction) -> Ticket:
        return self.sending.submit(action)

    def withdraw(self, ticket: Ticket) -> bool:
        """Take a ticket back before it is sent (True); False once it is in a call."""
        return self.sending.withdraw(ticket)

    async def confirm(self, task_id: str, submitted_at: int) -> TaskOutcome:
        """Wait until the board reports the task ended (`confirming.py`)."""
        if self.tasks is None:
            raise RuntimeError(f"{self.name} answers synchronously: it has no tasks to confirm")
        return await self.tasks.confirm(task_id, submitted_at)

    async def read_listings(self, jobs: Sequence[JobRef]) -> tuple[dict[str, BoardListing] | None, int]:
        """What the board says of `jobs`, in one call made within the request budget and
        through the circuit (a failure of it counts as any call's does); None and how long to
        wait (ms) when the call may not be made now or failed."""
        access, now = self.access, self.clock.now_ms()
        wait = access.budget.wait_ms(now, 0)
        if wait > 0:
            return None, wait
        permit = access.may_call(now)
        if not permit.call:
            return None, permit.wait_ms if permit.wait_ms is not None else LISTINGS_RETRY_MS
        spent = access.spend(now, 0, {})
        try:
            found = await access.call(lambda token: self.adapter.listings(jobs, token))
        except Throttled as exc:
            self._counted("throttled")
            access.throttled(self.clock.now_ms(), exc, spent)
            return None, LISTINGS_RETRY_MS
        except BoardDown as exc:
            self._counted("board_down")
            access.board_down(self.clock.now_ms(), exc)
            return None, LISTINGS_RETRY_MS
        except CallFailed as exc:
            self._counted("failed")
            access.call_failed(self.clock.now_ms(), [f"status of {jobs[0].posting_id}"], str(exc))
            return None, LISTINGS_RETRY_MS
        except Exception as exc:  # an adapter's bug is that read's failure: the circuit hears of it
            self._counted("failed")
            log.exception("%s: unexpected failure reading jobs' statuses", self.name)
            reason = f"unexpected {type(exc).__name__} reading jobs' statuses"
            access.call_failed(self.clock.now_ms(), [f"status of {jobs[0].posting_id}"], reason)
            return None, LISTINGS_RETRY_MS
        self._counted("answered")
        access.answered(self.clock.now_ms())
        return found, 0

    def _counted(self, outcome: str) -> None:
        metrics.CALLS.labels(self.name, "listings", outcome).inc()

    def task_deadline(self, submitted_at: int) -> int:
        """When a submitted version is sent again unless its task ended (`TaskBook`)."""
        return submitted_at + (self.tasks.book.timeout_ms if self.tasks is not None else 0)

    def set_share(self, owned: int, total: int) -> None:
        """This member's share of the group's rate budget and daily caps: the partitions it owns."""
        self.access.set_share(owned, total)

    def stranded(self) -> int:
        """Versions queued for a call that nothing will make (the watchdog; always 0 unless a
        wake-up was lost)."""
        return self.sending.stranded(polling=self.tasks is not None and self.tasks.asking)
