"""A budget nobody published, found from the board's 429s: the rate budget sending a backlog
as the sending does (calls of 10, 32 in flight) to a simulated board with a per-minute
budget over a rolling 60 s (the sandbox's own window, an honest `Retry-After`), on a fake
clock in milliseconds."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from consumers.destination.budget import FORGET_MS, RateBudget
from jobpost_dev.sandbox.limits import Limits, RollingWindow

MINUTE = 60_000
START = 1_796_000_000_000  # an epoch in ms: the budget keeps one clock, whichever
LATENCY_MS = 10  # each way
BATCH, IN_FLIGHT, COALESCE_MS = 10, 32, 1_000


@dataclass
class Board:
    """Admits a call if the records of the last 60 s and its own fit the budget of the time
    it arrives at; else 429 with the seconds until it would fit."""

    budget: Callable[[int], int]  # per minute, at a time
    window: RollingWindow = field(default_factory=RollingWindow)
    admitted: list[tuple[int, int]] = field(default_factory=list)  # (when, records)
    calls: list[tuple[int, int]] = field(default_factory=list)  # (when, records) of each, refused too
    refused: list[int] = field(default_factory=list)  # when each 429 was answered

    def call(self, now: int, records: int) -> float | None:
        """None: admitted; else the Retry-After."""
        self.calls.append((now, records))
        wait = self.window.wait_s(now / 1000, records, Limits(records_per_minute=self.budget(now)))
        if wait == 0:
            self.window.admit(now / 1000, records)
            self.admitted.append((now, records))
            return None
        self.refused.append(now)
        return float(math.ceil(wait)) if wait is not None else None

    def used(self, start: int, end: int) -> float:
        """The records admitted from `start` to `end` over the budget of those minutes."""
        records = sum(n for at, n in self.admitted if start <= at < end)
        return records / sum(self.budget(at) for at in range(start, end, MINUTE))


def send_backlog(budget: RateBudget, board: Board, until: int) -> None:
    """Always more to send: start a call whenever the budget admits one (as full as the
    budget lets it become within a second), up to 32 in flight; each is answered after its
    round trip."""
    now, flights = START, []  # (answered at, the budget's handle, Retry-After or None)
    while now < until:
        for flight in [f for f in flights if f[0] <= now]:
            flights.remove(flight)
            at, handle, refused = flight
            if refused is None:
                budget.answered(at)
            else:
                budget.throttled(at, refused, handle)
        wait = min((f[0] for f in flights), default=until) - now
        if len(flights) < IN_FLIGHT:
            admits = min(BATCH, budget.admits(now))
            if admits == 0:
                wait = min(wait, max(1, budget.wait_ms(now, 1)))
            elif admits < BATCH and 0 < (room := budget.wait_ms(now, BATCH)) <= COALESCE_MS:
                wait = min(wait, room)
            else:
                handle = budget.spend(now, admits)
                refused = board.call(now + LATENCY_MS, admits)
                flights.append((now + 2 * LATENCY_MS, handle, refused))
                continue
        now += max(1, wait)


def refusals(board: Board, since: int = START) -> float:
    """The share of the calls since `since` answered 429."""
    return sum(1 for at in board.refused if at >= since) / sum(1 for at, _ in board.calls if at >= since)


def test_a_found_budget_is_used_to_95_percent_with_few_429s():
    board, budget = Board(lambda at: 600), RateBudget(None, None)
    send_backlog(budget, board, START + 12 * MINUTE)
    assert board.used(START, START + MINUTE) >= 0.99  # the slow start fills the first window
    assert board.used(START + MINUTE, START + 12 * MINUTE) >= 0.95
    assert refusals(board) < 0.05
    found = budget.allowed(budget.records)
    assert found is not None and 570 <= found <= 620


def test_the_first_429_refuses_a_call_or_two_not_every_call_in_flight():
    board = Board(lambda at: 600)
    send_backlog(RateBudget(None, None), board, START + 30_000)
    assert 1 <= len(board.refused) <= 2
    assert board.used(START, START + MINUTE) == 1.0


def test_a_budget_that_doubles_is_found_again():
    doubled = START + 10 * MINUTE
    board, budget = Board(lambda at: 600 if at < doubled else 1_200), RateBudget(None, None)
    send_backlog(budget, board, doubled + 15 * MINUTE)
    # The old ceiling is forgotten 3 minutes after its last 429, then the rate grows.
    found_by = doubled + FORGET_MS + 4 * MINUTE
    assert board.used(found_by, found_by + 5 * MINUTE) >= 0.95
    assert refusals(board) < 0.05


def most_sent_in_a_minute(board: Board, since: int) -> int:
    """The most records the calls from `since` on carried in any 60 s, the refused ones too."""
    calls = [(at, n) for at, n in board.calls if at >= since]
    return max(sum(n for at, n in calls if start <= at < start + MINUTE) for start, _ in calls)


def test_a_budget_that_halves_is_respected_within_a_window():
    halved = START + 10 * MINUTE
    board, budget = Board(lambda at: 600 if at < halved else 300), RateBudget(None, None)
    send_backlog(budget, board, halved + 10 * MINUTE)
    assert [at for at in board.refused if at >= halved]  # the board said so
    # A window later the budget holds to the new one: no more is asked of the board than it
    # takes (and a probe), as few 429s as before, and a window later still as well used.
    assert most_sent_in_a_minute(board, halved + MINUTE) <= 300 + 2 * BATCH
    assert refusals(board, halved + MINUTE) < 0.05
    assert board.used(halved + 2 * MINUTE, halved + 10 * MINUTE) >= 0.95
