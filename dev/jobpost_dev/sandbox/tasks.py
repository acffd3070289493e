"""LinkedIn's asynchronous tasks: every job a `simpleJobPostings` call accepts becomes a
task, IN_PROGRESS until it ends SUCCEEDED or FAILED (learn.microsoft.com/linkedin/talent/
job-postings/api/check-job-taskstatus: "typically ... no longer than five minutes"). The
version counts as applied at the board only once its task succeeded.

Here a task runs `task_delay_s` (0 when off) and fails with `task_fail_probability`, both
drawn when it starts, so what a task comes to does not depend on when anyone looks. A task
of an UPDATE, RENEW or CLOSE fails when LinkedIn has no job under that id ("See task status
on most recent CREATE operation to determine if the API job was posted"). Tasks end in the
order of their end times; LinkedIn promises no order between tasks, so two versions of one
posting whose tasks overlap may land in either order (the consumer waits for a task before
it submits the next version).
"""

from __future__ import annotations

import heapq
import itertools
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from jobpost_dev.sandbox.state import SandboxPosting, Submission

TASK_URN = "urn:li:simpleJobPostingTask:"


@dataclass
class Task:
    id: str
    posting_id: str
    version: int
    operation: str  # CREATE, UPDATE, RENEW, CLOSE
    ends_at: float  # monotonic seconds
    ends_at_ms: int  # the same moment, as the board reports it
    fails: bool
    submission: Submission  # the posting's log entry, updated when the task ends

    @property
    def state(self) -> str:
        return self.submission.state


@dataclass
class Tasks:
    """Every task the board started, and those still running by end time."""

    by_id: dict[str, Task] = field(default_factory=dict)
    running: list[tuple[float, int, str]] = field(default_factory=list)  # (ends_at, seq, id)
    rng: random.Random = field(default_factory=random.Random)
    seq: itertools.count[int] = field(default_factory=itertools.count)

    def start(
        self,
        posting: SandboxPosting,
        posting_id: str,
        version: int,
        operation: str,
        now: float,
        now_ms: int,
        delay_s: float | None,
        fail_probability: float | None,
    ) -> Task:
        delay = delay_s or 0.0
        task_id = f"{TASK_URN}{uuid.uuid4()}"
        submission = Submission(version, operation, now_ms, task_id)
        fails = fail_probability is not None and self.rng.random() < fail_probability
        task = Task(
            task_id,
            posting_id,
            version,
            operation,
            now + delay,
            now_ms + round(delay * 1000),
            fails,
            submission,
        )
        posting.log.append(submission)
        self.by_id[task_id] = task
        heapq.heappush(self.running, (task.ends_at, next(self.seq), task_id))
        return task

    def settle(self, now: float, postings: dict[str, SandboxPosting]) -> None:
        """End every task whose time has come, in the order of their end times."""
        while self.running and self.running[0][0] <= now:
            task = self.by_id[heapq.heappop(self.running)[2]]
            _end(task, postings[task.posting_id])

    def answer(self, task_id: str) -> dict[str, Any] | None:
        """The task as `GET simpleJobPostingTasks` reports it (None: no such task)."""
        task = self.by_id.get(task_id)
        if task is None:
            return None
        found: dict[str, Any] = {"id": task.id, "status": task.state}
        if task.state == "SUCCEEDED":
            found["jobPosting"] = f"urn:li:jobPosting:{task.posting_id}"
        if task.submission.error is not None:
            found["errorMessage"] = task.submission.error
        return found


def _end(task: Task, posting: SandboxPosting) -> None:
    submission = task.submission
    submission.ended_at_ms = task.ends_at_ms
    if task.fails:
        submission.state, submission.error = "FAILED", _dropped(task, "the sandbox's task_fail_probability")
    elif task.operation != "CREATE" and not posting.versions:
        submission.state, submission.error = "FAILED", _dropped(task, "no job was created under this id")
    else:
        submission.state = "SUCCEEDED"
        posting.apply(task.version, task.ends_at_ms, closes=task.operation == "CLOSE")


def _dropped(task: Task, why: str) -> str:
    # The shape of LinkedIn's FAILED errorMessage ("Job {partner=…, partnerJobCode=…} was
    # dropped: true", then the invalid fields).
    return f"Job {{partnerJobCode={task.posting_id}}} was dropped: true; {task.operation} refused: {why}"
