"""One lane's version on its way through the destination."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from consumers.boards.base import ElementOutcome, JobAction


@dataclass(eq=False)
class Ticket:
    """One lane's action (a version's content, or a renewal or close of its job) waiting for,
    or in, a call. `notice` is set whenever there is news for the lane: its outcome, or that
    the destination holds it for the board."""

    action: JobAction
    queued_at: int
    outcome: asyncio.Future[ElementOutcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    notice: asyncio.Event = field(default_factory=asyncio.Event)
    pause_reason: str | None = None
    paused_until: int | None = None  # while paused: when the board is tried next (epoch ms)
    sent_at: int | None = None

    @property
    def held_ms(self) -> int:
        """How long the destination held it before the call that answered it: waiting for
        the board as a whole, the budget or a free call, never the posting's doing."""
        return 0 if self.sent_at is None else max(0, self.sent_at - self.queued_at)

    def pause(self, reason: str, until: int | None) -> None:
        """Held for the board as a whole; told again (a later `until`) while the board stays
        unavailable."""
        if self.outcome.done() or (self.pause_reason is not None and until == self.paused_until):
            return
        self.pause_reason, self.paused_until = reason, until
        self.notice.set()

    def settle(self, outcome: ElementOutcome) -> None:
        if not self.outcome.done():
            self.outcome.set_result(outcome)
        self.notice.set()
