"""The destination: one per board per process, what every lane of that board shares, as the
lanes see it. A lane hands its posting's next version to `submit` and gets a `Ticket`; the
sending (`sending.py`) carries it to the board in a batch with other postings' versions and
settles it with its own element's outcome; for an asynchronous board the lane then waits in
`confirm` for its task (`confirming.py`). Both call the board through one `BoardAccess`
(`access.py`: the token, the rate budget, the circuit), and neither knows the other: a change
of the circuit that one of them caused wakes both.

The lanes keep their order and their retry budgets (`consumers.lanes`).
"""

from __future__ import annotations

import asyncio

from consumers.boards.base import BoardAdapter, TaskOutcome, TokenSource
from consumers.clock import Clock, SystemClock
from consumers.destination.access import BoardAccess
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.destination.confirming import TaskPoller
from consumers.destination.sending import Sending
from consumers.destination.ticket import Ticket
from schemas.model import PostingUpdate


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
    ) -> None:
        self.name = adapter.destination
        self.clock = clock or SystemClock()
        self.access = BoardAccess(self.name, tokens, budget, circuit)
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

    def submit(self, update: PostingUpdate) -> Ticket:
        return self.sending.submit(update)

    def withdraw(self, ticket: Ticket) -> bool:
        """Take a ticket back before it is sent (True); False once it is in a call."""
        return self.sending.withdraw(ticket)

    async def confirm(self, task_id: str, submitted_at: int) -> TaskOutcome:
        """Wait until the board reports the task ended (`confirming.py`)."""
        if self.tasks is None:
            raise RuntimeError(f"{self.name} answers synchronously: it has no tasks to confirm")
        return await self.tasks.confirm(task_id, submitted_at)

    def task_deadline(self, submitted_at: int) -> int:
        """When a submitted version is sent again unless its task ended (`TaskBook`)."""
        return submitted_at + (self.tasks.book.timeout_ms if self.tasks is not None else 0)

    def set_share(self, owned: int, total: int) -> None:
        """This member's share of the group's rate budget: the partitions it owns."""
        self.access.set_share(owned, total)

    def stranded(self) -> int:
        """Versions queued for a call that nothing will make (the watchdog; always 0 unless a
        wake-up was lost)."""
        return self.sending.stranded(polling=self.tasks is not None and self.tasks.asking)
