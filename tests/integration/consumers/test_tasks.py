"""LinkedIn's asynchronous tasks (issue 22): a version is submitted, then delivered or
refused when its task ends; a posting's next version never goes before; a restarted
consumer polls the tasks it submitted instead of submitting again. Versions are written
straight to jobpost.postings; the consumer is a real process; the board is the sandbox."""

import itertools

from schemas import codec
from schemas.topics import Component
from tests.integration.consumers.conftest import dead_letters, state_history
from tests.processes import wait_until


def log_of(sandbox, posting_id: str) -> list[dict]:
    seen = sandbox.posting("linkedin", posting_id)
    return seen["log"] if seen else []


def ended(sandbox, postings: list[str], versions: int) -> bool:
    return all(
        len(log := log_of(sandbox, p)) == versions and all(s["state"] != "IN_PROGRESS" for s in log)
        for p in postings
    )


def test_tasks_that_take_2_s_and_fail_one_time_in_ten(sandbox, start_consumer, versions, kafka, topics):
    sandbox.limits("linkedin", task_delay_s=2, task_fail_probability=0.1)
    postings = [f"task{n}" for n in range(100)]
    for _ in range(3):
        versions.write(postings)
    start_consumer("linkedin")
    wait_until(lambda: ended(sandbox, postings, 3), 120, "every version's task to end")

    failed = {
        (p, s["version"]): s["error"] for p in postings for s in log_of(sandbox, p) if s["state"] == "FAILED"
    }
    letters = wait_until(
        lambda: len(found := dead_letters(kafka, topics.dlq(Component("linkedin")))) >= len(failed) and found,
        60,
        "letters",
    )
    lettered = {
        (letter["key"].decode(), codec.posting_updates().decode(letter["value"]).version): letter["headers"]
        for letter in letters
    }
    assert set(lettered) == set(failed)  # exactly the failed versions
    for key, error in failed.items():
        assert error in lettered[key]["jobpost.error"], key  # with the task's error
    for posting_id in postings:
        log = log_of(sandbox, posting_id)
        succeeded = [s["version"] for s in log if s["state"] == "SUCCEEDED"]
        assert sandbox.applied("linkedin", posting_id) == succeeded == sorted(succeeded)
        for earlier, later in itertools.pairwise(log):  # the request log: one task at a time per posting
            assert later["submitted_at"] >= earlier["ended_at"], (posting_id, earlier, later)
    print(f"{len(failed)} of 300 versions failed at LinkedIn and were dead-lettered with the task's error")


def test_a_consumer_killed_while_tasks_run_polls_them_after_its_restart(
    sandbox, start_consumer, versions, kafka
):
    sandbox.limits("linkedin", task_delay_s=8)
    postings = [f"kill{n}" for n in range(20)]
    versions.write(postings)
    consumer = start_consumer("linkedin")

    def submitted() -> dict[str, str] | None:
        states = {p: s[-1] for p, s in state_history(kafka, "linkedin").items()}
        if len(states) == len(postings) and all(s.status == "SUBMITTED" for s in states.values()):
            return {p: s.task_id for p, s in states.items()}
        return None

    tasks = wait_until(submitted, 30, "every version submitted")
    assert all(
        len(log_of(sandbox, p)) == 1 and log_of(sandbox, p)[0]["state"] == "IN_PROGRESS" for p in postings
    )
    consumer.kill()  # SIGKILL, its tasks still in progress
    start_consumer("linkedin")

    wait_until(lambda: all(sandbox.applied("linkedin", p) == [0] for p in postings), 60, "the tasks' outcome")
    for posting_id in postings:
        (submission,) = log_of(sandbox, posting_id)  # never submitted again
        assert submission["task_id"] == tasks[posting_id]
        assert sandbox.posting("linkedin", posting_id)["duplicates"] == 0

    def delivered() -> dict | None:
        history = state_history(kafka, "linkedin")
        return history if all(s[-1].status == "DELIVERED" for s in history.values()) else None

    final = wait_until(delivered, 30, "the restarted consumer's deliveries")
    assert all(s[-1].delivered_version == 0 for s in final.values())
