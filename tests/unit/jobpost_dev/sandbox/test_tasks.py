"""LinkedIn's asynchronous tasks in the sandbox: pure, with the time given."""

import random

from jobpost_dev.sandbox.state import SandboxPosting
from jobpost_dev.sandbox.tasks import Tasks


def start(tasks, postings, posting_id, version, operation, at, delay=None, fail=None):
    posting = postings.setdefault(posting_id, SandboxPosting())
    return tasks.start(posting, posting_id, version, operation, at, int(at * 1000), delay, fail)


def test_a_task_is_in_progress_for_its_delay_then_succeeds_and_only_then_counts():
    tasks, postings = Tasks(), {}
    task = start(tasks, postings, "p1", 0, "CREATE", 10.0, delay=2)
    tasks.settle(11.9, postings)
    assert tasks.answer(task.id) == {"id": task.id, "status": "IN_PROGRESS"}
    assert postings["p1"].versions == []
    tasks.settle(12.0, postings)
    assert tasks.answer(task.id)["status"] == "SUCCEEDED"
    assert postings["p1"].versions == [0]
    log = postings["p1"].log[0].to_json()
    assert (log["submitted_at"], log["ended_at"], log["state"]) == (10_000, 12_000, "SUCCEEDED")


def test_a_failed_task_says_why_and_applies_nothing():
    tasks, postings = Tasks(), {}
    task = start(tasks, postings, "p1", 0, "CREATE", 0.0, fail=1.0)
    tasks.settle(0.0, postings)
    answer = tasks.answer(task.id)
    assert answer["status"] == "FAILED" and "was dropped" in answer["errorMessage"]
    assert postings["p1"].versions == []


def test_an_update_of_a_job_linkedin_never_created_fails():
    tasks, postings = Tasks(), {}
    task = start(tasks, postings, "p1", 1, "UPDATE", 0.0)
    tasks.settle(0.0, postings)
    assert tasks.answer(task.id)["status"] == "FAILED"
    assert "no job was created" in tasks.answer(task.id)["errorMessage"]


def test_tasks_end_in_the_order_of_their_end_times_so_overlapping_versions_may_swap():
    tasks, postings = Tasks(), {}
    start(tasks, postings, "p1", 0, "CREATE", 0.0)
    start(tasks, postings, "p1", 1, "UPDATE", 1.0, delay=5)
    start(tasks, postings, "p1", 2, "UPDATE", 2.0, delay=1)
    tasks.settle(10.0, postings)
    assert postings["p1"].versions == [0, 2, 1]  # why the consumer waits for a task


def test_a_close_closes_and_the_fail_probability_is_drawn_per_task():
    tasks, postings = Tasks(rng=random.Random(7)), {}
    start(tasks, postings, "p1", 0, "CREATE", 0.0)
    start(tasks, postings, "p1", 1, "CLOSE", 0.0)
    tasks.settle(0.0, postings)
    assert postings["p1"].status == "closed"
    outcomes = [start(tasks, postings, f"q{i}", 0, "CREATE", 0.0, fail=0.3) for i in range(1000)]
    tasks.settle(0.0, postings)
    failed = sum(t.state == "FAILED" for t in outcomes)
    assert 230 < failed < 370
