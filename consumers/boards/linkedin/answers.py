"""How this code reads LinkedIn's answers: the statuses of a `simpleJobPostings` call, the
tasks it started, and the job posting status of each job.

HTTP 200 answers a status per element: 202 with a task id, or the element's error (4xx:
refused, e.g. 422 for a missing field). A CLOSE of a job closed already answers 409, which
counts as done.

The receipt is not the delivery: a task reports IN_PROGRESS, then SUCCEEDED or FAILED with
an `errorMessage` (check-job-taskstatus; PROCESSED without an error counts as SUCCEEDED,
with one as FAILED). A failed task's words say what LinkedIn's identity of a job (the
partner and `externalJobPostingId`) made of a repeat: a CREATE repeated after its answer was
lost FAILS ("Trying to create a job with same partnerIdentifier already exists … LinkedIn
job id: {n}"), read here as `JobExists` (the lane sends the same content as an UPDATE); an
UPDATE or RENEW of a job never created ("… is not allowed for a non-existing job") as
`NoJob` (a CREATE next); of a closed one as a refusal that says the job is closed.

The job's status is read back from the job posting status API (`GET {base}{status_path}
?ids=<externalJobPostingId>&…`, LinkedIn's Java SDK, check-job-posting-status): LISTED (with
`jobPostingUrl`), NOT_LISTED with `listingStatusDetail` (closed by the partner, expired, or
closed by LinkedIn with its reason), IN_PROGRESS.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from consumers.boards import Answer, excerpt, whole_call
from consumers.boards.base import (
    BoardListing,
    CallFailed,
    Delivered,
    ElementOutcome,
    JobAction,
    Operation,
    Rejected,
    Submitted,
    TaskFailure,
    TaskOutcome,
    TaskState,
    Unsure,
)
from runtime.http import retryable_status
from schemas.enums import ListingStatus

JOB_URN = "urn:li:jobPosting:"
_TASK_STATES = {
    "IN_PROGRESS": TaskState.IN_PROGRESS,
    "SUCCEEDED": TaskState.SUCCEEDED,
    "FAILED": TaskState.FAILED,
}
# check-job-taskstatus's words for what a failed task says of the job.
_DUPLICATE = re.compile(r"same partnerIdentifier already exists.*?LinkedIn job id: *(\d+)", re.S)
_NOT_EXISTING = "is not allowed for a non-existing job"
_CLOSED = "is not allowed for a closed job"


def element_outcomes(answer: Answer, actions: Sequence[JobAction]) -> list[ElementOutcome]:
    """What a `simpleJobPostings` call made of each of `actions`, in order."""
    refusal = whole_call(answer, len(actions))
    if refusal is not None:
        return refusal
    body = answer.json()
    elements = body.get("elements") if isinstance(body, dict) else None
    if not isinstance(elements, list):
        raise answer.unintelligible("has no element statuses")
    if len(elements) != len(actions):
        raise answer.unintelligible(f"has {len(elements)} element statuses for {len(actions)} jobs")
    return [_element_outcome(e, a) for e, a in zip(elements, actions, strict=True)]


def task_outcomes(answer: Answer, asked: Sequence[str]) -> dict[str, TaskOutcome]:
    """Where each task of `asked` stands; a task the answer leaves out stays unknown."""
    results = _results(answer, "the task poll", "task results")
    found: dict[str, TaskOutcome] = {}
    for task_id in asked:
        result = results.get(task_id)
        state = result.get("status") if isinstance(result, dict) else None
        error = result.get("errorMessage") if isinstance(result, dict) else None
        error = str(error) if error else None
        if state == "PROCESSED":  # evaluated while the customer's jobs still came from a feed
            state = "FAILED" if error else "SUCCEEDED"
        if state == "FAILED":
            found[task_id] = _failed(error)
        elif state in _TASK_STATES:  # an id left out, or a state nobody knows, stays unknown
            job = result.get("jobPosting") if isinstance(result, dict) else None
            found[task_id] = TaskOutcome(
                _TASK_STATES[state], job_id=job if isinstance(job, str) and job else None
            )
    return found


def listings(answer: Answer, asked: Sequence[str]) -> dict[str, BoardListing]:
    """The job posting status of each posting id of `asked` the answer names."""
    results = _results(answer, "the status read", "job posting statuses")
    found: dict[str, BoardListing] = {}
    for posting_id in asked:
        result = results.get(posting_id)
        if isinstance(result, dict):
            found[posting_id] = _listing(result)
    return found


def _results(answer: Answer, call: str, things: str) -> dict[str, Any]:
    """The `results` map of a batch read (a task poll, a status read). Such a call carries no
    posting, so a refusal of it is the call's, not a version's."""
    if whole_call(answer, 1) is not None:
        raise CallFailed(f"{answer.board} refused {call} ({answer.status}): {excerpt(answer.text)}")
    body = answer.json()
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, dict):
        raise answer.unintelligible(f"has no {things}")
    return results


def _element_outcome(element: Any, action: JobAction) -> ElementOutcome:
    status = _status(element.get("status")) if isinstance(element, dict) else None
    if status is None:
        return Unsure(f"linkedin answered this job with a status nobody can read: {excerpt(repr(element))!r}")
    if 200 <= status < 300:
        task_id = element.get("id")
        if isinstance(task_id, str) and task_id:
            return Submitted(task_id)
        return Unsure(f"linkedin accepted this job ({status}) without a task id")
    detail = f"linkedin element status {status}: {_message(element)}"
    if status == 409 and action.operation == Operation.CLOSE:
        return Delivered(gone=True)  # "Cannot close job which is already closed or does not exist"
    if retryable_status(status):
        return Unsure(detail)
    return Rejected(detail)


def _failed(error: str | None) -> TaskOutcome:
    """A FAILED task, with what its error says of the job when it says something."""
    text = error or ""
    if (duplicate := _DUPLICATE.search(text)) is not None:
        return TaskOutcome(TaskState.FAILED, error, f"{JOB_URN}{duplicate.group(1)}", TaskFailure.JOB_EXISTS)
    if _NOT_EXISTING in text:
        return TaskOutcome(TaskState.FAILED, error, failure=TaskFailure.NO_JOB)
    if _CLOSED in text:
        return TaskOutcome(TaskState.FAILED, error, failure=TaskFailure.JOB_CLOSED)
    return TaskOutcome(TaskState.FAILED, error)


def _listing(result: dict[str, Any]) -> BoardListing:
    """A job posting status as this code reads it: LISTED live (with its page); NOT_LISTED
    closed by the partner, expired, or closed by LinkedIn with its reason; IN_PROGRESS (or
    a value nobody knows) not decided."""
    info = _record(result.get("jobPostingInfo"))
    listed_at, expire_at = _millis(info.get("listedAt")), _millis(info.get("expireAt"))
    state = result.get("listingStatus")
    if state == "LISTED":
        url = result.get("jobPostingUrl")
        return BoardListing(
            ListingStatus.LIVE, url if isinstance(url, str) else None, None, listed_at, expire_at
        )
    if state != "NOT_LISTED":
        return BoardListing(None, None, None, listed_at, expire_at)
    detail = _record(result.get("listingStatusDetail"))
    message = detail.get("statusMessage")
    reason = str(message) if message else str(detail.get("errorCode") or "not listed")
    if detail.get("errorCode") == "EXPIRED":
        status = ListingStatus.EXPIRED
    elif detail.get("errorType") == "CUSTOMER_ERROR":
        status = ListingStatus.CLOSED
    else:
        status = ListingStatus.CLOSED_BY_BOARD
    return BoardListing(status, None, reason, listed_at, expire_at)


def _record(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _millis(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _status(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None  # the OpenAPI file says string


def _message(element: dict[str, Any]) -> str:
    error = element.get("error")
    if isinstance(error, dict):
        return str(error.get("message", error))
    return str(error or "")
