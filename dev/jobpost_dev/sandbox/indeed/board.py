"""Indeed as one board: `createSourcedJobPostings` upserts, `expireSourcedJobsBySourcedPostingId`
expires, `node`/`nodes` read a job's status, and Indeed takes jobs down on its own.

An upsert is judged by Indeed's identity of a job (client, `sourceName`, `jobPostingId`);
`Idempotency-Key` is not read. The same content upserted again changes nothing (a repeat);
an expired job expired again stays expired (a repeat)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from jobpost_dev.sandbox.indeed import rules
from jobpost_dev.sandbox.indeed.jobs import IndeedJob
from jobpost_dev.sandbox.limits import INDEED
from jobpost_dev.sandbox.state import BoardState, Submission, content_key

UPSERT = "createSourcedJobPostings"
EXPIRE = "expireSourcedJobsBySourcedPostingId"
DUPLICATES = "The request contains duplicate job entries"  # troubleshoot-errors
# A test's fault targeted at a job (`posting_ids`): its error, the rest of the call applied.
FAULTS = {
    "reject": ("BAD_USER_INPUT", "sandbox: rejected"),
    "error": ("INTERNAL_SERVER_ERROR", "sandbox: unavailable"),
}

Error = tuple[str, str]  # (extensions.code, message)


class JobNotFound(LookupError):
    pass


class JobClosed(ValueError):
    pass


@dataclass
class IndeedBoard(BoardState):
    name: str = INDEED
    jobs: dict[tuple[str, str, str], IndeedJob] = field(default_factory=dict)  # (client, sourceName, id)
    by_sourced_id: dict[str, IndeedJob] = field(default_factory=dict)  # every job ever made
    rng: random.Random = field(default_factory=random.Random)

    def reset(self) -> None:
        super().reset()
        self.jobs, self.by_sourced_id = {}, {}

    def settle(self, now_ms: int) -> None:
        """Count the jobs indexing rejected since last asked."""
        for job in self.by_sourced_id.values():
            if job.rejects and not job.rejection_counted and job.status(now_ms) == "rejected":
                why = job.reason or "rejected at indexing"
                self.refused(job.posting_id, "indexing", "REJECTED", why, job.indexed_at_ms)
                job.rejection_counted = True

    def owner(self, sourced_id: Any) -> str | None:
        job = self.by_sourced_id.get(sourced_id) if isinstance(sourced_id, str) else None
        return job.posting_id if job is not None else None

    def upsert(self, items: list[Any], client: str, now_ms: int) -> list[tuple[dict[str, Any], list[Error]]]:
        """Each job's result and errors, in order."""
        self.settle(now_ms)
        ids = [_job_id(item) for item in items]
        twice = {i for i in ids if i is not None and ids.count(i) > 1}
        return [self._upsert(item, i, i in twice, client, now_ms) for item, i in zip(items, ids, strict=True)]

    def _upsert(
        self, item: Any, posting_id: str | None, twice: bool, client: str, now_ms: int
    ) -> tuple[dict[str, Any], list[Error]]:
        refused: dict[str, Any] = {"jobPosting": None}
        found = rules.problems(item)
        if posting_id is None:
            found = found or ["Missing required field: metadata"]
            self.refused("", "element", "BAD_USER_INPUT", "; ".join(found), now_ms)
            return refused, [("BAD_USER_INPUT", m) for m in found]
        posting = self.posting(posting_id)
        submission = Submission(
            posting.number(content_key(item, False)), "UPSERT", now_ms, ended_at_ms=now_ms
        )
        posting.log.append(submission)
        errors = [("BAD_USER_INPUT", DUPLICATES)] if twice else [("BAD_USER_INPUT", m) for m in found]
        if not errors and (fault := self.faults.element_fault(posting_id)) != "none":
            code, message = FAULTS[fault]
            submission.state, submission.error = "REFUSED", message
            return refused, [(code, message)]
        if errors:
            submission.state, submission.error = "REFUSED", "; ".join(m for _, m in errors)
            self.refused(posting_id, "element", "BAD_USER_INPUT", submission.error, now_ms)
            return refused, errors
        submission.state = "APPLIED"
        job = self._apply(item, posting_id, submission.version, client, now_ms)
        return {"jobPosting": {"sourcedPostingId": job.sourced_id}}, []

    def _apply(
        self, item: dict[str, Any], posting_id: str, version: int, client: str, now_ms: int
    ) -> IndeedJob:
        source_name = item["metadata"]["jobSource"]["sourceName"]
        key = (client, source_name, posting_id)
        job, posting, limits = self.jobs.get(key), self.posting(posting_id), self.limits
        window_ms = round((limits.reactivation_window_s or 0) * 1000)
        rejects = (
            limits.rejection_probability is not None and self.rng.random() < limits.rejection_probability
        )
        if job is None or (job.expired_at_ms is not None and now_ms - job.expired_at_ms > window_ms):
            job = IndeedJob(
                sourced_id=str(uuid.uuid4()),
                client=client,
                source_name=source_name,
                posting_id=posting_id,
                content=item,
                version=version,
                received_at_ms=now_ms,
                indexed_at_ms=now_ms,
                rejects=False,
            )
            job.receive(now_ms, limits.indexing_delay_s, rejects)
            self.jobs[key] = self.by_sourced_id[job.sourced_id] = job
        elif job.state == "expired":  # reactivated within the window: the same sourcedPostingId
            job.content, job.version = item, version
            job.receive(now_ms, limits.indexing_delay_s, rejects)
        elif job.content == item:
            self.repeat(posting)
            return job
        else:
            job.content, job.version = item, version
            if job.state == "open" and job.rejects and job.reason is None:  # changed: indexed anew
                job.receive(now_ms, limits.indexing_delay_s, rejects)
        posting.applied(version, now_ms)
        return job

    def expire(self, items: list[Any], client: str, now_ms: int) -> list[tuple[dict[str, Any], list[Error]]]:
        self.settle(now_ms)
        return [self._expire(item, client, now_ms) for item in items]

    def _expire(self, item: Any, client: str, now_ms: int) -> tuple[dict[str, Any], list[Error]]:
        sourced_id = item.get("sourcedPostingId") if isinstance(item, dict) else None
        job = self.by_sourced_id.get(sourced_id) if isinstance(sourced_id, str) else None
        if job is None or job.client != client:
            return {"trackingKey": None}, [("BAD_USER_INPUT", f"No job has sourcedPostingId {sourced_id!r}")]
        posting = self.posting(job.posting_id)
        version = posting.number(content_key(job.content, True))
        posting.log.append(Submission(version, "EXPIRE", now_ms, ended_at_ms=now_ms, state="APPLIED"))
        if (fault := self.faults.element_fault(job.posting_id)) != "none":
            return {"trackingKey": None}, [FAULTS[fault]]
        if job.state == "expired":
            self.repeat(posting)
        else:
            job.state, job.expired_at_ms, job.since_ms = "expired", now_ms, now_ms
            job.version = version
            posting.applied(version, now_ms)
        return {"trackingKey": str(uuid.uuid4())}, []

    def node(self, sourced_id: Any, client: str, now_ms: int) -> dict[str, Any] | None:
        self.settle(now_ms)
        job = self.by_sourced_id.get(sourced_id) if isinstance(sourced_id, str) else None
        return job.node(now_ms) if job is not None and job.client == client else None

    def close_by_board(self, sourced_id: str, reason: str, now_ms: int) -> IndeedJob:
        """Indeed will not show the job: rejected at indexing if it is not live yet, taken
        down if it is."""
        job = self.by_sourced_id.get(sourced_id)
        if job is None:
            raise JobNotFound(f"Indeed holds no job {sourced_id}")
        status = job.status(now_ms)
        if status == "received":
            job.rejects, job.reason, job.indexed_at_ms = True, reason, now_ms
        elif status == "live":
            job.state, job.reason, job.since_ms = "closed_by_board", reason, now_ms
        else:
            raise JobClosed(f"job {sourced_id} is {status} already")
        return job

    def jobs_of(self, posting_id: str | None) -> list[IndeedJob]:
        return [j for j in self.by_sourced_id.values() if posting_id in (None, j.posting_id)]

    def posting_status(self, posting_id: str, now_ms: int) -> str:
        held = self.jobs_of(posting_id)
        shown = ("received", "live")
        return "closed" if held and all(j.status(now_ms) not in shown for j in held) else "open"


def _job_id(item: Any) -> str | None:
    metadata = item.get("metadata") if isinstance(item, dict) else None
    found = metadata.get("jobPostingId") if isinstance(metadata, dict) else None
    return found if isinstance(found, str) and found else None
