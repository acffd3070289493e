"""What a member holds of its destination now, as `jobpost.board-status` carries it
(`schemas.board_status.BoardStatus`): its budgets and their use this minute and today, its
circuit, a pause of every lane, its oldest unconfirmed task.

The rate budget (`budget.py`) is read through its public state only; what the calls used
this minute is the access's own count (`use.UseMeter`), so the budget's internals can
change freely.

Pure: time is passed in (epoch milliseconds).
"""

from __future__ import annotations

from consumers.destination.access import BoardAccess
from consumers.destination.circuit import CircuitState
from consumers.destination.quota import QuotaKind
from consumers.destination.tasks import TaskBook
from schemas.board_status import BoardStatus, DailyUse


def board_status(
    access: BoardAccess, tasks: TaskBook | None, member: str, interval_ms: int, now: int
) -> BoardStatus:
    """The member's status of its destination now."""
    budget, quota, circuit = access.budget, access.quota, access.circuit
    records, requests = access.meter.used(now)
    hold = access.hold(now)
    oldest = None if tasks is None else tasks.oldest_submitted_at()
    return BoardStatus(
        board=access.name.value,
        member=member,
        published_at=now,
        interval_ms=interval_ms,
        share=budget.share,
        records_per_minute=budget.records.configured,
        requests_per_minute=budget.requests.configured,
        records_allowed=budget.allowed(budget.records),
        requests_allowed=budget.allowed(budget.requests),
        records_this_minute=records,
        requests_this_minute=requests,
        daily=tuple(DailyUse(kind.value, quota.caps.get(kind), quota.used(kind, now)) for kind in QuotaKind),
        daily_reset_at=quota.reset_at(now),
        circuit=CircuitState(circuit.state).name.lower(),
        circuit_reason=circuit.reason or None,
        circuit_since=circuit.since_ms or None,
        paused_reason=None if hold is None else hold[0],
        paused_until=None if hold is None else hold[1],
        open_tasks=0 if tasks is None else len(tasks),
        oldest_task_submitted_at=oldest,
    )
