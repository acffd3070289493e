"""LinkedIn as one board: the elements of a `simpleJobPostings` call answered one by one, the
tasks they start ended against the jobs LinkedIn holds, the task and job posting status
reads, and the closes LinkedIn makes on its own.

A job is the partner's (the client the token was issued to) and its `externalJobPostingId`;
`Idempotency-Key` means nothing to LinkedIn and is not read. A repeat is what LinkedIn makes
of it: a CREATE of a job it holds fails in its task ("Trying to create a job with same
partnerIdentifier already exists"), an UPDATE with the content the job has changes nothing,
a CLOSE of a closed job answers 409."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from jobpost_dev.sandbox.limits import LINKEDIN
from jobpost_dev.sandbox.linkedin import rules
from jobpost_dev.sandbox.linkedin.jobs import JOB_URN, Job, partner_urn
from jobpost_dev.sandbox.linkedin.tasks import Task, Tasks
from jobpost_dev.sandbox.state import BoardState, Submission, content_key

FIRST_JOB_NUMBER = 4_200_000_001
# A test's fault targeted at a job (`posting_ids`): its element's error, the rest applied.
FAULTS = {
    "reject": rules.Refusal(400, "sandbox: rejected"),
    "error": rules.Refusal(503, "sandbox: unavailable"),
}


def accepted(task_id: str) -> dict[str, Any]:
    return {"status": 202, "id": task_id, "location": f"/simpleJobPostings/{task_id.replace(':', '%3A')}"}


def refused(refusal: rules.Refusal) -> dict[str, Any]:
    error: dict[str, Any] = {"message": refusal.message, "status": refusal.status}
    if refusal.code is not None:
        error["code"] = refusal.code
    return {"status": refusal.status, "error": error}


class JobNotFound(LookupError):
    pass


class JobClosed(ValueError):
    pass


@dataclass
class LinkedInBoard(BoardState):
    name: str = LINKEDIN
    tasks: Tasks = field(default_factory=Tasks)
    jobs: dict[tuple[str, str], Job] = field(default_factory=dict)  # (partner, externalJobPostingId)
    numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(FIRST_JOB_NUMBER))

    def reset(self) -> None:
        super().reset()
        self.tasks, self.jobs = Tasks(), {}

    def settle(self, now: float) -> None:
        """End every task whose time has come: tasks end on time, whether anyone asks or not."""
        for task in self.tasks.due(now):
            self._end(task)

    def submit(self, elements: list[Any], client: str, now: float, now_ms: int) -> list[dict[str, Any]]:
        """One answer per element, in order; the rest of a batch is applied whatever one
        element's fate ("Ensure that requests do not include duplicate updates to the same
        externalJobPostingId": every element of an id sent twice is refused)."""
        self.settle(now)
        ids = [_external_id(e) for e in elements]
        twice = {i for i in ids if i is not None and ids.count(i) > 1}
        answers = [
            self._one(e, i, i in twice, client, now, now_ms) for e, i in zip(elements, ids, strict=True)
        ]
        self.settle(now)  # a task without a delay ends at once
        return answers

    def _one(
        self, element: Any, posting_id: str | None, twice: bool, client: str, now: float, now_ms: int
    ) -> dict[str, Any]:
        refusal = rules.element_refusal(element, now_ms)
        if posting_id is None:  # no job to speak of: nothing to record but the refusal
            refusal = refusal or rules.required("externalJobPostingId")
            self.refused("", "element", refusal.status, refusal.message, now_ms)
            return refused(refusal)
        posting = self.posting(posting_id)
        operation = str(element.get("jobPostingOperationType"))
        content = {k: v for k, v in element.items() if k != "jobPostingOperationType"}
        submission = Submission(posting.number(content_key(content, operation == "CLOSE")), operation, now_ms)
        posting.log.append(submission)
        if twice:
            refusal = rules.Refusal(
                422, "ERROR :: /externalJobPostingId :: more than one update of this job in one request\n"
            )
        elif (fault := self.faults.element_fault(posting_id)) != "none":
            refusal = FAULTS[fault]
        elif refusal is None and operation == "CLOSE":
            refusal = self._close_refusal(client, posting_id, now_ms)
        if refusal is not None:
            submission.state, submission.error, submission.ended_at_ms = "REFUSED", refusal.message, now_ms
            if not refusal.message.startswith("sandbox: "):
                self.refused(posting_id, "element", refusal.status, refusal.message, now_ms)
            return refused(refusal)
        limits = self.limits
        task = self.tasks.start(
            submission, client, posting_id, content, now, limits.task_delay_s, limits.task_fail_probability
        )
        return accepted(task.id)

    def _close_refusal(self, client: str, posting_id: str, now_ms: int) -> rules.Refusal | None:
        job = self.jobs.get((client, posting_id))
        if job is not None and job.state == "open" and not job.expired(now_ms):
            return None
        if job is not None and job.state == "closed":
            self.repeat(self.posting(posting_id))
        return rules.Refusal(409, rules.CANNOT_CLOSE)

    def _end(self, task: Task) -> None:
        at = task.ends_at_ms
        task.submission.ended_at_ms = at
        job = self.jobs.get((task.partner, task.posting_id))
        why = self._failure(task, job)
        if why is not None:
            task.submission.state, task.submission.error = "FAILED", why
            self.refused(task.posting_id, "task", "FAILED", why, at)
            return
        task.submission.state = "SUCCEEDED"
        posting = self.posting(task.posting_id)
        if job is None:
            job = self._create(task)
            posting.applied(task.version, at)
        elif task.operation == "CLOSE":
            if job.state != "open":
                self.repeat(posting)
            else:
                job.state, job.since_ms = "closed", at
                posting.applied(task.version, at)
        elif job.content != task.content:
            job.content, job.version = task.content, task.version
            job.listed_at_ms = task.content["listedAt"]  # what LinkedIn shows; the lifetime stays
            if "expireAt" in task.content:
                job.expires_at_ms = task.content["expireAt"]
            posting.applied(task.version, at)
        elif task.operation == "UPDATE":
            self.repeat(posting)
        if task.operation == "RENEW" and job.expires_at_ms is not None and self.limits.renewal_s:
            job.expires_at_ms += round(self.limits.renewal_s * 1000)  # "by 30 days"
        task.job = job.urn

    def _failure(self, task: Task, job: Job | None) -> str | None:
        partner = partner_urn(task.partner)
        if task.fails:
            return rules.CATCH_ALL
        if task.operation == "CREATE" and job is not None:
            self.repeat(self.posting(task.posting_id))
            return rules.duplicate_create(job.number, task.posting_id)
        if task.operation in ("UPDATE", "RENEW"):
            if job is None:
                return rules.not_existing(task.operation, partner, task.posting_id)
            if job.state != "open" or job.expired(task.ends_at_ms):
                return rules.not_open(task.operation, partner, task.posting_id)
        if task.operation == "CLOSE":
            return None if job is not None else rules.CANNOT_CLOSE  # it was there when accepted
        return rules.task_failure({"externalJobPostingId": task.posting_id, **task.content}, partner)

    def _create(self, task: Task) -> Job:
        listed_at = task.content["listedAt"]
        lifetime = self.limits.job_lifetime_s
        expires_at = task.content.get("expireAt")
        if expires_at is None and lifetime is not None:
            expires_at = listed_at + round(lifetime * 1000)
        job = Job(
            number=next(self.numbers),
            partner=task.partner,
            external_id=task.posting_id,
            content=task.content,
            version=task.version,
            listed_at_ms=listed_at,
            expires_at_ms=expires_at,
            since_ms=task.ends_at_ms,
        )
        self.jobs[(task.partner, task.posting_id)] = job
        return job

    def task_answer(self, ids: list[str], now: float) -> dict[str, Any]:
        """`GET simpleJobPostingTasks?ids=…`: `{results, statuses, errors}` (check-job-taskstatus)."""
        self.settle(now)
        results: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for task_id in ids:
            task = self.tasks.find(task_id, now)
            if task is None:
                errors[task_id] = {"status": 404, "message": f"No task {task_id}"}
            else:
                results[task_id] = task.answer()
        return {"results": results, "statuses": {}, "errors": errors}

    def status_answer(self, ids: list[str], client: str, now: float, now_ms: int) -> dict[str, Any]:
        """`GET /v2/jobPostingStatus?ids=<externalJobPostingId>…`: the caller's jobs."""
        self.settle(now)
        results: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for external_id in ids:
            job = self.jobs.get((client, external_id))
            if job is not None:
                results[external_id] = job.listing(now_ms)
            elif self.tasks.pending(client, external_id):
                results[external_id] = {"externalJobPostingId": external_id, "listingStatus": "IN_PROGRESS"}
            else:
                errors[external_id] = {
                    "status": 404,
                    "message": f"No job with externalJobPostingId {external_id}",
                }
        return {"results": results, "statuses": {}, "errors": errors}

    def close_by_board(self, job_id: str, reason: str, now_ms: int) -> Job:
        """LinkedIn closes a job on its own (moderation, policy): NOT_LISTED with the reason."""
        number = job_id.removeprefix(JOB_URN)
        job = next((j for j in self.jobs.values() if str(j.number) == number), None)
        if job is None:
            raise JobNotFound(f"LinkedIn holds no job {job_id}")
        if job.status(now_ms) != "live":
            raise JobClosed(f"job {job.urn} is {job.status(now_ms)} already")
        job.state, job.reason, job.since_ms = "closed_by_board", reason, now_ms
        return job

    def jobs_of(self, posting_id: str | None) -> list[Job]:
        return [j for (_, external_id), j in self.jobs.items() if posting_id in (None, external_id)]

    def posting_status(self, posting_id: str, now_ms: int) -> str:
        held = self.jobs_of(posting_id)
        return "closed" if held and all(j.status(now_ms) != "live" for j in held) else "open"


def _external_id(element: Any) -> str | None:
    found = element.get("externalJobPostingId") if isinstance(element, dict) else None
    return found if isinstance(found, str) and 0 < len(found) <= rules.EXTERNAL_ID_MAX else None
