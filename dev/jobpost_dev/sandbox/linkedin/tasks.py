"""LinkedIn's asynchronous tasks: every job a `simpleJobPostings` call accepts becomes a task,
IN_PROGRESS until it ends SUCCEEDED or FAILED (check-job-taskstatus: "Typically the job
creation process should take no longer than five minutes"). What the job comes to is decided
when the task ends, against the jobs LinkedIn holds then: that is when a duplicate CREATE, an
UPDATE of a job never created, a description too short or a location out of format fail.

Here a task runs `task_delay_s` (0 when off) and fails anyway with `task_fail_probability`,
both drawn when it starts. Tasks end in the order of their end times; LinkedIn promises no
order between tasks, so two versions of one posting whose tasks overlap may land in either
order. "The Task ids returned in the above response are valid for 24 hours" (create-jobs):
after that the id is unknown.
"""

from __future__ import annotations

import heapq
import itertools
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from jobpost_dev.sandbox.linkedin.rules import TASK_URN
from jobpost_dev.sandbox.state import Submission

TASK_ID_LIFETIME_S = 24 * 3600


@dataclass
class Task:
    id: str
    posting_id: str  # the externalJobPostingId
    partner: str
    version: int  # the content's number
    operation: str  # CREATE, UPDATE, RENEW, CLOSE
    content: dict[str, Any]  # the element without its operation
    started_at: float
    ends_at: float  # the sandbox clock's seconds
    ends_at_ms: int  # the same moment, as the board reports it
    fails: bool  # the catch-all failure drawn at the start
    submission: Submission  # the posting's log entry, updated when the task ends
    job: str | None = None  # the job's URN, once the task made or touched one

    @property
    def state(self) -> str:
        return self.submission.state

    def answer(self) -> dict[str, Any]:
        """The task as `GET simpleJobPostingTasks` reports it."""
        found: dict[str, Any] = {"id": self.id, "externalJobPostingId": self.posting_id, "status": self.state}
        if self.state == "SUCCEEDED" and self.job is not None:
            found["jobPosting"] = self.job
        if self.submission.error is not None:
            found["errorMessage"] = self.submission.error
        return found


@dataclass
class Tasks:
    """Every task the board started, and those still running by end time."""

    by_id: dict[str, Task] = field(default_factory=dict)
    running: list[tuple[float, int, str]] = field(default_factory=list)  # (ends_at, seq, id)
    rng: random.Random = field(default_factory=random.Random)
    seq: itertools.count[int] = field(default_factory=itertools.count)

    def start(
        self,
        submission: Submission,
        partner: str,
        posting_id: str,
        content: dict[str, Any],
        now: float,
        delay_s: float | None,
        fail_probability: float | None,
    ) -> Task:
        delay = delay_s or 0.0
        task = Task(
            id=f"{TASK_URN}{uuid.uuid4()}",
            posting_id=posting_id,
            partner=partner,
            version=submission.version,
            operation=submission.operation,
            content=content,
            started_at=now,
            ends_at=now + delay,
            ends_at_ms=submission.submitted_at_ms + round(delay * 1000),
            fails=fail_probability is not None and self.rng.random() < fail_probability,
            submission=submission,
        )
        submission.task_id = task.id
        self.by_id[task.id] = task
        heapq.heappush(self.running, (task.ends_at, next(self.seq), task.id))
        return task

    def due(self, now: float) -> list[Task]:
        """The tasks whose time has come, in the order of their end times, taken off the run."""
        ended = []
        while self.running and self.running[0][0] <= now:
            ended.append(self.by_id[heapq.heappop(self.running)[2]])
        return ended

    def pending(self, partner: str, posting_id: str) -> bool:
        """Whether a task for this job is still running."""
        return any(
            (t.partner, t.posting_id) == (partner, posting_id)
            for t in (self.by_id[i] for _, _, i in self.running)
        )

    def find(self, task_id: str, now: float) -> Task | None:
        """The task of that id, while its id is valid."""
        task = self.by_id.get(task_id)
        if task is None or now - task.started_at >= TASK_ID_LIFETIME_S:
            return None
        return task
