"""A member's status of its destination (`consumers.destination.status`): the budgets, what
this minute's calls used (`use.UseMeter`) and today's, the circuit, a pause and the oldest
unconfirmed task, as GET /ops/boards will show them. A fake clock: milliseconds."""

from consumers.boards.base import Throttled
from consumers.destination.access import BoardAccess
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.destination.quota import DailyQuota, QuotaKind
from consumers.destination.status import board_status
from consumers.destination.tasks import TaskBook
from consumers.destination.use import UseMeter
from schemas import codec
from schemas.board_status import DailyUse
from schemas.model import Destination
from tests.unit.consumers.fakes import FakeTokens

DAY = 86_400_000
NOW = 20 * DAY + 3_600_000  # 01:00 UTC


def access() -> BoardAccess:
    quota = DailyQuota({QuotaKind.RECORDS: 1000, QuotaKind.REQUESTS: None, QuotaKind.TASK_STATUS_CALLS: 50})
    made = BoardAccess(Destination.LINKEDIN, FakeTokens(), RateBudget(120, 30), Circuit(), quota)
    made.set_share(1, 2)
    return made


def sending(records: int) -> dict[QuotaKind, int]:
    """What a call of the sending takes of today's quota."""
    return {QuotaKind.RECORDS: records, QuotaKind.REQUESTS: 1}


def test_the_meter_counts_the_last_minutes_calls_and_gives_back_the_records_of_a_refused_one():
    meter = UseMeter(60_000)
    first, second = object(), object()
    meter.spent(0, 10, first)
    meter.spent(30_000, 5, second)
    meter.refused(second)  # a 429: its request counts, its records were not taken

    assert meter.used(30_000) == (10, 2)
    assert meter.used(60_000) == (0, 1)  # the first call left the window
    assert meter.used(90_001) == (0, 0)


def test_a_status_shows_the_budgets_the_use_this_minute_and_today_and_the_oldest_task():
    board = access()
    board.spend(NOW - 70_000, 7, sending(7))  # today, not this minute
    board.spend(NOW - 20_000, 4, sending(4))
    call = board.spend(NOW - 10_000, 3, sending(3))
    board.throttled(NOW - 9_000, Throttled("429", retry_after_s=1), call)
    tasks = TaskBook(poll_interval_ms=2_000, timeout_ms=600_000)
    tasks.add("t-new", NOW - 1_000)
    tasks.add("t-old", NOW - 5_000)

    status = board_status(board, tasks, "host-1", 5_000, NOW)

    assert (status.board, status.member, status.key) == ("linkedin", "host-1", "linkedin/host-1")
    assert (status.records_per_minute, status.requests_per_minute, status.share) == (120, 30, 0.5)
    assert status.requests_allowed == 15  # its share
    assert (status.records_this_minute, status.requests_this_minute) == (4, 2)
    assert status.daily == (
        DailyUse("records", 1000, 14),  # the caps are the group's; the use this member's
        DailyUse("requests", None, 3),
        DailyUse("task_status_calls", 50, 0),
    )
    assert status.daily_reset_at == 21 * DAY
    assert (status.circuit, status.paused_reason, status.open_tasks) == ("closed", None, 2)
    assert status.oldest_task_submitted_at == NOW - 5_000
    assert codec.board_statuses().decode(codec.board_statuses().encode(status)) == status


def test_an_open_circuit_shows_with_its_reason_and_pauses_the_board():
    board = access()
    for at in (NOW - 2, NOW - 1):
        board.board_down(at, ConnectionRefusedError("connection refused"))

    status = board_status(board, None, "host-1", 5_000, NOW)

    assert (status.circuit, status.circuit_reason, status.circuit_since) == (
        "open",
        "connection refused",
        NOW - 1,
    )
    assert status.paused_reason == "linkedin is unavailable: connection refused"
    assert status.paused_until == NOW - 1 + 1_000  # the first probe
    assert (status.open_tasks, status.oldest_task_submitted_at) == (0, None)
    assert not status.stale(NOW + 15_000) and status.stale(NOW + 15_001)  # three intervals
