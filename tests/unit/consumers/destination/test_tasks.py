"""Which tasks to ask about, and when one has ended."""

from consumers.boards.base import TaskOutcome, TaskState
from consumers.destination.tasks import TaskBook

IN_PROGRESS, SUCCEEDED = TaskOutcome(TaskState.IN_PROGRESS), TaskOutcome(TaskState.SUCCEEDED)


def test_tasks_are_asked_about_once_per_interval_oldest_asked_first():
    book = TaskBook(poll_interval_ms=1_000, timeout_ms=60_000)
    book.add("t1", 0)
    book.add("t2", 500)
    assert book.due(999, 10) == [] and book.next_due_in(999) == 1
    assert book.due(1_000, 10) == ["t1"]
    assert book.due(1_500, 10) == ["t1", "t2"]
    book.answered(1_500, ["t1"], {"t1": IN_PROGRESS})
    assert book.due(1_600, 10) == ["t2"]
    assert book.due(2_600, 1) == ["t2"]  # at most `limit` per call


def test_an_ended_task_is_no_longer_followed():
    book = TaskBook(poll_interval_ms=1_000, timeout_ms=60_000)
    book.add("t1", 0)
    book.add("t2", 0)
    failed = TaskOutcome(TaskState.FAILED, "location is required")
    ended = book.answered(1_000, ["t1", "t2"], {"t1": SUCCEEDED, "t2": failed})
    assert ended == [("t1", SUCCEEDED), ("t2", failed)]
    assert len(book) == 0 and book.next_due_in(2_000) is None


def test_a_task_in_progress_past_the_timeout_ends_as_timed_out():
    book = TaskBook(poll_interval_ms=1_000, timeout_ms=5_000)
    book.add("t1", 0)
    book.add("t2", 0)
    assert book.answered(4_000, ["t1", "t2"], {"t1": IN_PROGRESS}) == []
    ended = dict(book.answered(5_000, ["t1", "t2"], {"t1": IN_PROGRESS}))
    assert ended["t1"].state == TaskState.IN_PROGRESS and "still in progress after 5 s" in (
        ended["t1"].error or ""
    )
    assert "not known to the board" in (ended["t2"].error or "")


def test_a_restarted_consumer_asks_about_an_old_task_at_once():
    book = TaskBook(poll_interval_ms=1_000, timeout_ms=600_000)
    book.add("old", 10_000)
    assert book.due(50_000, 10) == ["old"]
