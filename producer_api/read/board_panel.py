"""Each board as `GET /ops/boards` shows it, merged from its consumer members' statuses
(`schemas.board_status.BoardStatus`): the group's budgets per minute and per day, what the
members used of them this minute and today, the circuit, a pause, the oldest unconfirmed
task, and every member with the time of its last status.

A member is stale when its last status is older than three of its own publishing
intervals (it died, or cannot reach Kafka): it is listed, marked stale, never dropped, but
its circuit, pause, tasks and this minute's use no longer count for the board, since they
are not known any more. What it used today still counts until the daily reset it named:
that use happened, and the cap is the group's.

Pure: time is passed in (epoch milliseconds).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from schemas.board_status import BoardStatus

# The board's circuit is its worst member's: one member whose calls fail says the board may be down.
_WORST_FIRST = ("open", "probing", "closed")


@dataclass(frozen=True)
class MinuteBudget:
    kind: str  # records, requests
    per_minute: float | None  # the group's budget (None: none configured)
    used: int  # by the live members within the last 60 s


@dataclass(frozen=True)
class DailyBudget:
    kind: str  # records, requests, task_status_calls
    per_day: int | None  # the group's cap (None: none)
    used: int  # by every member since the last reset
    reset_at: int  # epoch ms


@dataclass(frozen=True)
class MemberPanel:
    member: str
    last_status_at: int  # epoch ms
    stale: bool
    share: float
    circuit: str
    circuit_reason: str | None
    paused_reason: str | None
    paused_until: int | None
    records_this_minute: int
    requests_this_minute: int
    open_tasks: int
    oldest_task_age_s: float | None


@dataclass(frozen=True)
class BoardPanel:
    board: str
    per_minute: list[MinuteBudget]
    per_day: list[DailyBudget]
    circuit: str | None  # None: no live member
    circuit_reason: str | None
    paused: bool
    paused_reason: str | None
    open_tasks: int
    oldest_task_age_s: float | None
    members: list[MemberPanel]


def board_panels(boards: Iterable[str], statuses: Iterable[BoardStatus], now: int) -> dict[str, BoardPanel]:
    """Every board of `boards` (one without any member's status too), from the statuses."""
    found: dict[str, list[BoardStatus]] = {board: [] for board in boards}
    for status in statuses:
        found.setdefault(status.board, []).append(status)
    return {board: _panel(board, members, now) for board, members in found.items()}


def _panel(board: str, statuses: list[BoardStatus], now: int) -> BoardPanel:
    statuses = sorted(statuses, key=lambda s: s.member)
    live = [s for s in statuses if not s.stale(now)]
    newest = max(statuses, key=lambda s: s.published_at, default=None)
    worst = min(live, key=lambda s: _WORST_FIRST.index(s.circuit), default=None)
    paused = next((s for s in live if s.paused_reason), None)
    oldest = min((s.oldest_task_submitted_at for s in live if s.oldest_task_submitted_at), default=None)
    return BoardPanel(
        board=board,
        per_minute=[
            MinuteBudget(
                "records",
                None if newest is None else newest.records_per_minute,
                sum(s.records_this_minute for s in live),
            ),
            MinuteBudget(
                "requests",
                None if newest is None else newest.requests_per_minute,
                sum(s.requests_this_minute for s in live),
            ),
        ],
        per_day=_per_day(statuses, newest, now),
        circuit=None if worst is None else worst.circuit,
        circuit_reason=None if worst is None else worst.circuit_reason,
        paused=paused is not None,
        paused_reason=None if paused is None else paused.paused_reason,
        open_tasks=sum(s.open_tasks for s in live),
        oldest_task_age_s=_age_s(oldest, now),
        members=[_member(s, now) for s in statuses],
    )


def _per_day(statuses: list[BoardStatus], newest: BoardStatus | None, now: int) -> list[DailyBudget]:
    """Each kind of the newest status's daily quota; used: what every member counted since
    the reset that started the current day (a status from a day before counts nothing)."""
    if newest is None:
        return []
    today = [s for s in statuses if s.daily_reset_at == newest.daily_reset_at and s.daily_reset_at > now]
    return [
        DailyBudget(
            use.kind,
            use.cap,
            sum(u.used for s in today for u in s.daily if u.kind == use.kind),
            newest.daily_reset_at,
        )
        for use in newest.daily
    ]


def _member(status: BoardStatus, now: int) -> MemberPanel:
    return MemberPanel(
        member=status.member,
        last_status_at=status.published_at,
        stale=status.stale(now),
        share=status.share,
        circuit=status.circuit,
        circuit_reason=status.circuit_reason,
        paused_reason=status.paused_reason,
        paused_until=status.paused_until,
        records_this_minute=status.records_this_minute,
        requests_this_minute=status.requests_this_minute,
        open_tasks=status.open_tasks,
        oldest_task_age_s=_age_s(status.oldest_task_submitted_at, now),
    )


def _age_s(since: int | None, now: int) -> float | None:
    return None if since is None else max(0.0, (now - since) / 1000)
