"""Confirmation for an asynchronous board (LinkedIn): a lane whose version was
`Submitted(task_id)` waits in `confirm` until the task ended; one poller per destination
asks the board about many tasks per call (`adapter.confirm`), every
`task_poll_interval_s` at most per task, within the destination's request budget and its
daily cap of task-status calls, through its circuit and with its token (`BoardAccess`).
Under a daily cap the interval stretches so the calls the open tasks need until the reset
fit in what is left of it (`quota.poll_interval_ms`); none left, polls wait for the reset
(a task is never timed out for it: it ends only when asked about). A poll that fails is tried again after the
interval; while the circuit is open nobody polls (or the poll is the probe). A change of the
circuit's state wakes it, whoever caused it.
"""

from __future__ import annotations

import asyncio
import logging
import math

from consumers.boards.base import BoardAdapter, BoardDown, CallFailed, TaskOutcome, Throttled
from consumers.clock import Clock
from consumers.destination import metrics
from consumers.destination.access import A_TASK_POLL, BoardAccess
from consumers.destination.quota import QuotaKind, poll_interval_ms
from consumers.destination.tasks import TaskBook

log = logging.getLogger(__name__)


class TaskPoller:
    def __init__(
        self,
        adapter: BoardAdapter,
        access: BoardAccess,
        clock: Clock,
        poll_interval_s: float,
        timeout_s: float,
    ) -> None:
        self.adapter = adapter
        self.access = access
        self.name = adapter.destination
        self.clock = clock
        self.book = TaskBook(int(poll_interval_s * 1000), int(timeout_s * 1000))
        self.base_interval_ms = self.book.poll_interval_ms
        self._waiters: dict[str, asyncio.Future[TaskOutcome]] = {}
        self._changed = asyncio.Event()
        access.wakes(self._changed)
        self._failed_at: int | None = None
        self.asking = False  # a poll is in flight

    async def confirm(self, task_id: str, submitted_at: int) -> TaskOutcome:
        """Where the task ended: SUCCEEDED, FAILED (with the board's error), or IN_PROGRESS
        with an error when it did not end within the timeout."""
        waiter: asyncio.Future[TaskOutcome] = asyncio.get_running_loop().create_future()
        self._waiters[task_id] = waiter
        self.book.add(task_id, submitted_at)
        self._gauge()
        self._changed.set()
        try:
            return await waiter
        finally:
            if self._waiters.get(task_id) is waiter:
                del self._waiters[task_id]
                self.book.forget(task_id)
                self._gauge()

    async def poll(self) -> None:
        """Ask about the tasks as they are due, until cancelled."""
        clock = self.clock
        while True:
            self._changed.clear()
            now = clock.now_ms()
            wait = self._wait_before_poll(now)
            if wait is None:
                await self._changed.wait()
            elif wait > 0:
                await clock.sleep(wait / 1000, self._changed)
            else:
                await self._ask(now)

    def _wait_before_poll(self, now: int) -> int | None:
        self._stretch(now)
        due = self.book.next_due_in(now)
        if due is None:
            return None
        if self._failed_at is not None:
            due = max(due, self._failed_at + self.book.poll_interval_ms - now)
        if due > 0:
            return due
        if (held := self.access.held_for_the_day(now, A_TASK_POLL)) > 0:
            return held
        budget = self.access.budget.wait_ms(now, 0)
        if budget > 0:
            return budget
        permit = self.access.may_call(now)
        if not permit.call:
            # None: a probe is in flight; its end wakes this poller, the interval is a backstop
            return permit.wait_ms if permit.wait_ms is not None else self.book.poll_interval_ms
        return 0

    async def _ask(self, now: int) -> None:
        access, clock = self.access, self.clock
        per_call = max(1, self.adapter.tasks_per_call)
        left = access.quota.left(QuotaKind.TASK_STATUS_CALLS, now)
        limit = self.adapter.max_batch if left is None else min(self.adapter.max_batch, left * per_call)
        asked = self.book.due(now, limit)
        if not asked:
            access.release(now)  # the probe, if this was to be one
            return
        requests = math.ceil(len(asked) / per_call)  # what the adapter's `confirm` will make
        spent = access.spend(now, 0, {QuotaKind.TASK_STATUS_CALLS: requests})
        self.asking = True
        try:
            found = await access.call(lambda token: self.adapter.confirm(asked, token))
        except Throttled as exc:
            self._failed("throttled")
            access.throttled(clock.now_ms(), exc, spent)
            return
        except BoardDown as exc:
            self._failed("board_down")
            access.board_down(clock.now_ms(), exc)
            return
        except CallFailed as exc:
            self._failed("failed")
            access.call_failed(clock.now_ms(), [f"task {asked[0]}"], str(exc))
            return
        except Exception as exc:  # an adapter's bug is that poll's failure: the circuit hears of it
            self._failed("failed")
            log.exception("%s: unexpected failure asking about tasks", self.name)
            reason = f"unexpected {type(exc).__name__} asking about tasks"
            access.call_failed(clock.now_ms(), [f"task {asked[0]}"], reason)
            return
        finally:
            self.asking = False
        self._failed_at = None
        metrics.CALLS.labels(self.name, "confirm", "answered").inc()
        access.answered(clock.now_ms())
        for task_id, outcome in self.book.answered(clock.now_ms(), asked, found):
            waiter = self._waiters.pop(task_id, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(outcome)
        self._gauge()

    def _stretch(self, now: int) -> None:
        """Each task asked about at most every `poll_interval_ms`: the setting's, or longer so
        the open tasks' polls until the reset fit in today's task-status calls left."""
        quota = self.access.quota
        self.book.poll_interval_ms = poll_interval_ms(
            self.base_interval_ms,
            len(self.book),
            self.adapter.tasks_per_call,
            quota.left(QuotaKind.TASK_STATUS_CALLS, now),
            quota.until_reset_ms(now),
        )

    def _failed(self, outcome: str) -> None:
        metrics.CALLS.labels(self.name, "confirm", outcome).inc()
        self._failed_at = self.clock.now_ms()

    def _gauge(self) -> None:
        metrics.TASKS_IN_PROGRESS.labels(self.name).set(len(self.book))
