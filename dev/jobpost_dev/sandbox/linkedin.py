"""LinkedIn's Job Posting API as the sandbox imitates it (the HTTP routes are in
`jobpost_dev.sandbox.app`).

`POST /rest/simpleJobPostings` with `x-restli-method: batch_create` and a `LinkedIn-Version`
carries up to 100 jobs (`elements`), never two of one `externalJobPostingId`
(learn.microsoft.com/linkedin/talent/job-postings/api/create-jobs). HTTP 200 answers one
status per element: 202 with a task id, or the element's error (422 "ERROR :: /title ::
field is required but not found and has no default value"), as LinkedIn's OpenAPI file does
(github.com/linkedin-developers/job-posting-development-tools, job_posting_v2.yaml). A job
requires `companyApplyUrl`, `externalJobPostingId`, `jobPostingOperationType`, `title`,
`description`, `listedAt` (epoch ms, not in the future) and `location`, and the company:
`integrationContext` (`urn:li:organization:<id>`, or `companyName` for a customer without a
contract). Title and id at most 200 characters, the description at most 25,000.

Left out on purpose: the OpenAPI file's `minLength: 100` of the description. jobpost's API
accepts shorter descriptions (CONTRACT.md), and every test posting has one; a description
the real board refuses is refused per element, like any other content.

`GET /rest/simpleJobPostingTasks?ids=…&ids=…` (check-job-taskstatus) answers
`{results: {<task urn>: {id, status, jobPosting?, errorMessage?}}, statuses, errors}`; an id
that is not a task URN answers 400 "Batch key parameter value is invalid", a query string
over LinkedIn's 4 KB limit 414 (check-job-posting-status: "Query String 4 KB max length").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fastapi.responses import JSONResponse

from jobpost_dev.sandbox.state import BadKeys, BoardState
from jobpost_dev.sandbox.tasks import TASK_URN, Tasks
from jobpost_dev.sandbox.tokens import TokenCheck
from schemas.model import Destination

REQUIRED = (
    "externalJobPostingId",
    "jobPostingOperationType",
    "title",
    "description",
    "listedAt",
    "location",
    "companyApplyUrl",
)
OPERATIONS = ("CREATE", "UPDATE", "RENEW", "CLOSE")
ORGANIZATION = re.compile(r"urn:li:organization:\d+")
URL = re.compile(r"https?://[^\s/]+\S*")
LONGEST = {"title": 200, "externalJobPostingId": 200, "description": 25_000}
CLOCK_SKEW_MS = 60_000  # how far in the future a `listedAt` may be before it is refused
QUERY_MAX_BYTES = 4096


def refusal(element: Any, now_ms: int) -> str | None:
    """Why LinkedIn would refuse this job (its 422 message), or None."""
    if not isinstance(element, dict):
        return "ERROR :: / :: the element is not a record"
    for name in REQUIRED:
        if element.get(name) in (None, ""):
            return f"ERROR :: /{name} :: field is required but not found and has no default value"
    if not element.get("integrationContext") and not element.get("companyName"):
        return "ERROR :: /integrationContext :: field is required but not found and has no default value"
    for name in ("externalJobPostingId", "title", "description", "location", "companyApplyUrl"):
        if not isinstance(element[name], str):
            return f"ERROR :: /{name} :: {element[name]!r} is not a string"
    context = element.get("integrationContext")
    if context is not None and not (isinstance(context, str) and ORGANIZATION.fullmatch(context)):
        return (
            f"ERROR :: /integrationContext :: {context!r} is not an organization URN urn:li:organization:<id>"
        )
    operation = element["jobPostingOperationType"]
    if operation not in OPERATIONS:
        return f'ERROR :: /jobPostingOperationType :: "{operation}" is not an enum symbol'
    for name, most in LONGEST.items():
        if len(element[name]) > most:
            return f"ERROR :: /{name} :: length {len(element[name])} exceeds the maximum of {most}"
    listed = element["listedAt"]
    if not isinstance(listed, int) or isinstance(listed, bool):
        return f"ERROR :: /listedAt :: {listed!r} is not an epoch time in milliseconds"
    if listed > now_ms + CLOCK_SKEW_MS:
        return "ERROR :: /listedAt :: must not be a future time"
    if not URL.fullmatch(element["companyApplyUrl"]):
        return f"ERROR :: /companyApplyUrl :: {element['companyApplyUrl']!r} is not a URL"
    if element.get("listingType", "BASIC") not in ("BASIC", "PREMIUM"):
        return f'ERROR :: /listingType :: "{element["listingType"]}" is not an enum symbol'
    if element.get("listingType") == "PREMIUM" and not element.get("contract"):
        return "ERROR :: /contract :: a PREMIUM job requires its contract"
    return None


def accepted(task_id: str) -> dict[str, Any]:
    return {"status": 202, "id": task_id, "location": f"/simpleJobPostings/{task_id.replace(':', '%3A')}"}


def refused(status: int, message: str) -> dict[str, Any]:
    return {"status": status, "error": {"message": message, "status": status}}


@dataclass
class LinkedInBoard(BoardState):
    name: str = Destination.LINKEDIN.value
    tasks: Tasks = field(default_factory=Tasks)
    answered: dict[str, str] = field(default_factory=dict)  # idempotency key → its task

    def reset(self) -> None:
        super().reset()
        self.tasks = Tasks()
        self.answered = {}

    def submit(self, elements: list[Any], keys: list[tuple[str, int]], now: float, now_ms: int) -> list[Any]:
        """One answer per element, in order; the rest of a batch is applied whatever one
        element's fate."""
        ids = [e.get("externalJobPostingId") if isinstance(e, dict) else None for e in elements]
        for (posting_id, _), external_id in zip(keys, ids, strict=True):
            if posting_id != external_id:
                raise BadKeys(f"Idempotency-Key {posting_id!r} is not the element's externalJobPostingId")
        self.tasks.settle(now, self.postings)
        repeated = {i for i in ids if ids.count(i) > 1}
        answers = [
            self._one(element, posting_id, version, posting_id in repeated, now, now_ms)
            for element, (posting_id, version) in zip(elements, keys, strict=True)
        ]
        self.tasks.settle(now, self.postings)  # a task without a delay ends at once
        return answers

    def _one(
        self, element: Any, posting_id: str, version: int, repeated: bool, now: float, now_ms: int
    ) -> dict[str, Any]:
        posting = self.posting(posting_id)
        if repeated:
            return refused(
                422, "ERROR :: /externalJobPostingId :: more than one update of this job in one call"
            )
        key = f"{posting_id}:{version}"
        earlier = self.tasks.by_id.get(self.answered.get(key, ""))
        if earlier is not None and earlier.state != "FAILED":  # a FAILED version may be tried anew
            posting.duplicates += 1
            return accepted(earlier.id)
        fault = self.faults.element_fault(posting_id)
        if fault == "reject":
            return refused(400, "sandbox: rejected")
        if fault == "error":
            return refused(503, "sandbox: unavailable")
        why = refusal(element, now_ms)
        if why is not None:
            return refused(422, why)
        operation = element["jobPostingOperationType"]
        if operation == "CLOSE" and posting.status == "closed" and posting.versions:
            return refused(409, "the job is closed already")
        limits = self.limits
        task = self.tasks.start(
            posting,
            posting_id,
            version,
            operation,
            now,
            now_ms,
            limits.task_delay_s,
            limits.task_fail_probability,
        )
        self.answered[key] = task.id
        return accepted(task.id)

    def task_answer(self, ids: list[str], now: float) -> dict[str, Any]:
        self.tasks.settle(now, self.postings)
        results: dict[str, Any] = {}
        errors: dict[str, Any] = {}
        for task_id in ids:
            found = self.tasks.answer(task_id)
            if found is None:
                errors[task_id] = {"status": 404, "message": f"no task {task_id}"}
            else:
                results[task_id] = found
        return {"results": results, "statuses": {}, "errors": errors}


def bad_task_ids(ids: list[str], query: bytes) -> JSONResponse | None:
    if len(query) > QUERY_MAX_BYTES:
        return whole_call(414, f"the query string is {len(query)} bytes, over LinkedIn's 4 KB")
    if not ids or any(not i.startswith(TASK_URN) or len(i) == len(TASK_URN) for i in ids):
        return whole_call(400, "Batch key parameter value is invalid")
    return None


def whole_call(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """LinkedIn's error body for a call refused as a whole."""
    return JSONResponse({"message": message, "status": status}, status, headers)


def unauthorized(check: TokenCheck) -> JSONResponse:
    # Both bodies are LinkedIn's (job_posting_v2.yaml, the 401 examples).
    if check is TokenCheck.EXPIRED:
        body = {
            "serviceErrorCode": 65602,
            "message": "The token used in the request has expired",
            "status": 401,
        }
    else:
        body = {"serviceErrorCode": 65600, "message": "Invalid access token", "status": 401}
    return JSONResponse(body, 401)
