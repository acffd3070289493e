"""Each board as GET /ops/boards shows it, merged from its consumer members' statuses
(`producer_api.read.board_panel`), and the answer's HTTP shape (fakes: no Kafka)."""

import asyncio
import dataclasses
import time

from producer_api.config import ApiSettings
from producer_api.http.ops_models import BoardsOut
from producer_api.operations import Operations
from producer_api.read.board_panel import DailyBudget, MinuteBudget, board_panels
from schemas.board_status import BoardStatus, DailyUse

NOW = 1_800_000_000_000
RESET = NOW + 3_600_000


def status(member: str, **changes: object) -> BoardStatus:
    base = BoardStatus(
        board="linkedin",
        member=member,
        published_at=NOW - 1_000,
        interval_ms=5_000,
        share=0.5,
        records_per_minute=120.0,
        requests_per_minute=30.0,
        records_allowed=60.0,
        requests_allowed=15.0,
        records_this_minute=10,
        requests_this_minute=2,
        daily=(
            DailyUse("records", 1000, 40),
            DailyUse("requests", None, 8),
            DailyUse("task_status_calls", 50, 5),
        ),
        daily_reset_at=RESET,
        circuit="closed",
        circuit_reason=None,
        circuit_since=None,
        paused_reason=None,
        paused_until=None,
        open_tasks=1,
        oldest_task_submitted_at=NOW - 4_000,
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_board_sums_its_live_members_use_and_shows_its_worst_circuit_and_oldest_task():
    statuses = [
        status("a"),
        status(
            "b",
            records_this_minute=5,
            requests_this_minute=1,
            circuit="open",
            circuit_reason="503 from the board",
            paused_reason="linkedin is unavailable: 503 from the board",
            oldest_task_submitted_at=NOW - 9_000,
        ),
    ]

    panel = board_panels(["linkedin", "indeed"], statuses, NOW)["linkedin"]

    assert panel.per_minute == [MinuteBudget("records", 120.0, 15), MinuteBudget("requests", 30.0, 3)]
    assert panel.per_day == [
        DailyBudget("records", 1000, 80, RESET),
        DailyBudget("requests", None, 16, RESET),
        DailyBudget("task_status_calls", 50, 10, RESET),
    ]
    assert (panel.circuit, panel.circuit_reason) == ("open", "503 from the board")
    assert panel.paused and panel.paused_reason == "linkedin is unavailable: 503 from the board"
    assert (panel.open_tasks, panel.oldest_task_age_s) == (2, 9.0)
    assert [(m.member, m.stale, m.circuit) for m in panel.members] == [
        ("a", False, "closed"),
        ("b", False, "open"),
    ]


def test_a_stale_member_is_listed_as_stale_its_day_still_counted_and_nothing_else():
    stale = status(
        "gone",
        published_at=NOW - 15_001,
        circuit="open",
        circuit_reason="timeout",
        oldest_task_submitted_at=NOW - 60_000,
    )
    yesterday = status("old", published_at=NOW - 86_400_000, daily_reset_at=NOW - 3_600_000)

    panel = board_panels(["linkedin"], [status("a"), stale, yesterday], NOW)["linkedin"]

    assert [(m.member, m.stale, m.last_status_at) for m in panel.members] == [
        ("a", False, NOW - 1_000),
        ("gone", True, NOW - 15_001),
        ("old", True, NOW - 86_400_000),
    ]
    assert panel.per_minute[0] == MinuteBudget("records", 120.0, 10)  # the live member's only
    assert panel.per_day[0] == DailyBudget("records", 1000, 80, RESET)  # today's: a and gone
    assert (panel.circuit, panel.oldest_task_age_s, panel.open_tasks) == ("closed", 4.0, 1)


def test_a_board_no_member_published_for_shows_no_circuit_and_no_members():
    panel = board_panels(["linkedin", "indeed"], [status("a")], NOW)["indeed"]

    assert (panel.circuit, panel.paused, panel.members, panel.per_day) == (None, False, [], [])
    assert panel.per_minute == [MinuteBudget("records", None, 0), MinuteBudget("requests", None, 0)]


class _Statuses:
    def __init__(self) -> None:
        now = time.time_ns() // 1_000_000
        self.reset = now + 3_600_000
        self.statuses = [status("a", published_at=now, daily_reset_at=self.reset)]

    def all(self) -> list[BoardStatus]:
        return self.statuses


def test_get_ops_boards_keeps_the_sandbox_fields_and_adds_each_boards_status():
    statuses = _Statuses()
    ops = Operations(ApiSettings(tokens="t"), None, board_status=statuses)  # type: ignore[arg-type]

    answer = BoardsOut.model_validate(asyncio.run(ops.boards()), from_attributes=True).model_dump(mode="json")

    assert (answer["available"], answer["boards"]) == (False, {})
    assert set(answer["status"]) == {"linkedin", "indeed"}
    linkedin = answer["status"]["linkedin"]
    assert linkedin["per_minute"][0] == {"kind": "records", "per_minute": 120.0, "used": 10}
    assert linkedin["per_day"][0] == {
        "kind": "records",
        "per_day": 1000,
        "used": 40,
        "reset_at": statuses.reset,
    }
    assert (linkedin["circuit"], linkedin["members"][0]["member"]) == ("closed", "a")
    assert answer["status"]["indeed"]["members"] == []
