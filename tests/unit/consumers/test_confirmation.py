"""An asynchronous board (LinkedIn's tasks) through the lanes: submitted, then delivered
or refused when the task ends; the next version only after; many tasks per poll."""

import itertools

from consumers.boards.base import BoardDown, TaskOutcome, TaskState
from consumers.destination.circuit import CircuitState
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import Destination
from tests.unit.consumers.fakes import Harness, item, scenario


def test_a_version_is_submitted_then_delivered_when_its_task_succeeded():
    async def body(h: Harness):
        h.add(item("a", 0))
        await h.clock.run(lambda: "a" in h.outcomes.latest, 10_000)
        submitted = h.state("a")
        assert submitted.status == DeliveryStatus.SUBMITTED and submitted.task_id
        assert submitted.delivered_version is None and submitted.pending_version == 0
        await h.settle(1)
        assert (h.state("a").status, h.state("a").delivered_version) == (DeliveryStatus.DELIVERED, 0)
        assert [o for _, o, _ in h.outcomes.timeline("a")] == ["SUBMITTED", "DELIVERED"]
        assert h.outcomes.events[0].task_id == submitted.task_id

    scenario(body, confirms=True)


def test_the_next_version_is_never_submitted_before_the_previous_task_ended():
    async def body(h: Harness):
        h.add(*(item(f"p{n}", v, offset=v * 10 + n) for v in range(3) for n in range(10)))
        await h.settle(30)
        for n in range(10):
            sends = [(t, v) for t, elements in h.board.calls for p, v in elements if p == f"p{n}"]
            assert [v for _, v in sends] == [0, 1, 2]
            for (_, v), (next_sent, _) in itertools.pairwise(sends):
                (task_id,) = [x for x in h.board.task_ends if x.startswith(f"task-p{n}-{v}-")]
                ended_at = h.board.task_ends[task_id][0]
                # The board reported the task ended (a poll after its end) before the next version went.
                assert any(ended_at <= at <= next_sent and task_id in asked for at, asked in h.board.polls)
        assert max(len(asked) for _, asked in h.board.polls) == 10  # many tasks per poll

    scenario(body, confirms=True)


def test_a_failed_task_dead_letters_its_version_with_the_boards_error():
    async def body(h: Harness):
        h.board.task_outcome = lambda p, v: (
            TaskOutcome(TaskState.FAILED, "companyApplyUrl is required")
            if v == 1
            else TaskOutcome(TaskState.SUCCEEDED)
        )
        h.add(*(item("a", v) for v in range(3)))
        await h.settle(3)
        ((posting, version, error, _),) = h.outcomes.letters
        assert (posting, version) == ("a", 1)
        assert "failed: companyApplyUrl is required" in error
        assert h.state("a").delivered_version == 2

    scenario(body, confirms=True)


def test_a_task_in_progress_past_the_timeout_is_retried_like_a_failed_call():
    async def body(h: Harness):
        h.board.task_delay_ms = 10**9  # the first task never ends
        h.add(item("a", 0))
        await h.clock.run(
            lambda: h.outcomes.latest.get("a") is not None and h.state("a").status == DeliveryStatus.RETRYING,
            60_000,
        )
        assert "still in progress after 5 s" in (h.state("a").last_error or "")
        h.board.task_delay_ms = 1_000
        await h.settle(1)
        assert h.board.sent("a") == [0, 0]
        assert h.state("a").status == DeliveryStatus.DELIVERED

    scenario(body, confirms=True, task_timeout_s=5)


def test_a_restarted_consumer_polls_the_stored_task_instead_of_submitting_again():
    async def body(h: Harness):
        h.board.task_ends["task-before"] = (h.clock.now + 500, TaskOutcome(TaskState.SUCCEEDED))
        h.outcomes.latest["a"] = DeliveryState(
            Destination.LINKEDIN,
            "a",
            DeliveryStatus.SUBMITTED,
            delivered_version=0,
            pending_version=1,
            attempts=1,
            first_attempt_at=h.clock.now - 1_000,
            task_id="task-before",
            submitted_at=h.clock.now - 1_000,
        )
        h.add(item("a", 1), item("a", 2))
        await h.settle(2)
        assert h.board.sent("a") == [2]  # version 1 never submitted again
        assert any("task-before" in asked for _, asked in h.board.polls)
        assert h.state("a").delivered_version == 2

    scenario(body, confirms=True)


def test_polls_stay_within_the_request_budget_and_wait_out_a_board_down():
    async def body(h: Harness):
        h.board.task_delay_ms = 20_000
        h.add(*(item(f"p{n}", 0, offset=n) for n in range(5)))
        await h.clock.run(lambda: len(h.board.polls) >= 2, 60_000)
        h.board.down = BoardDown("connection refused")
        await h.clock.run(lambda: h.destination.circuit.state != CircuitState.CLOSED, 60_000)
        down_at = h.clock.now
        await h.clock.run(lambda: h.clock.now - down_at > 120_000, 200_000)
        h.board.down = None
        await h.settle(5, limit_ms=300_000)
        assert not h.outcomes.letters  # no task timed out or failed for the board's outage
        polls = [t for t, _ in h.board.polls] + [t for t, _ in h.board.calls]
        for start in polls:  # 10 requests a minute, sends and polls together
            assert sum(1 for t in polls if start <= t < start + 60_000) <= 10

    scenario(body, confirms=True, requests_per_minute=10)
