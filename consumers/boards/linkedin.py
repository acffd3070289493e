"""LinkedIn Job Posting API: `POST {base}/rest/simpleJobPostings` as a Rest.li
batch_create, then `GET {base}/rest/simpleJobPostingTasks?ids=…` for what became of it.

What LinkedIn requires (learn.microsoft.com/linkedin/talent/job-postings/api/create-jobs,
and the OpenAPI file github.com/linkedin-developers/job-posting-development-tools,
job_posting_v2.yaml): a bearer token from the client-credentials flow; headers
`x-restli-method: batch_create`, `LinkedIn-Version: YYYYMM` (the /rest endpoints);
`{elements: [...]}` of at most 100 jobs, never two of one `externalJobPostingId`; per job
`integrationContext` (the company's urn:li:organization), `companyApplyUrl`,
`externalJobPostingId`, `jobPostingOperationType` (CREATE, UPDATE, RENEW, CLOSE — a close
re-posts the job with CLOSE), `title` (≤ 200), `description` (≤ 25,000), `listedAt` (epoch
ms, not in the future) and `location` ("CITY, STATE", "CITY, COUNTRY", …); `listingType`
BASIC for a free job. HTTP 200 answers a status per element: 202 with a task id, or the
element's error (4xx: refused, e.g. 422 for a missing field). A CLOSE of a job closed
already answers 409, which counts as done.

The receipt is not the delivery: a task reports IN_PROGRESS, then SUCCEEDED or FAILED with
an `errorMessage` (check-job-taskstatus; PROCESSED without an error counts as SUCCEEDED,
with one as FAILED). Task ids are asked for as `ids=<urn>&ids=<urn>` (the documented form),
at most 50 per GET so the query stays under LinkedIn's 4 KB (check-job-posting-status).

Choices the documentation leaves open: CREATE for version 0, UPDATE for every later one
(an UPDATE of a job LinkedIn never created fails in its task); `listedAt` is the version's
`last_update_time_millis` (the record carries no creation time); a posting without a
location or apply URL takes its employer's (`listing.employers`); a posting's structured
locations are sent as "City, Region, CC", the first as `location` (the rest are not sent yet).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import aiohttp
from pydantic import Field

from consumers.boards import Answer, Element, call, excerpt, idempotency_keys, prepare, settled, whole_call
from consumers.boards.base import (
    CallFailed,
    Delivered,
    ElementOutcome,
    Rejected,
    Submitted,
    TaskOutcome,
    TaskState,
    Unsure,
)
from consumers.boards.settings import BoardSettings
from listing import linkedin_rules
from listing.employers import EmployerRegistry
from runtime.http import retryable_status
from schemas.model import Destination, Op, Posting, PostingUpdate

MOST_PER_CALL = 100
TASK_IDS_PER_CALL = 50
_TASK_STATES = {
    "IN_PROGRESS": TaskState.IN_PROGRESS,
    "SUCCEEDED": TaskState.SUCCEEDED,
    "FAILED": TaskState.FAILED,
}


class LinkedInSettings(BoardSettings):
    ENV: ClassVar[str] = "JOBPOST_CONSUMER_LINKEDIN__"
    TOKEN_PATH: ClassVar[str] = "/oauth/v2/accessToken"  # real: https://www.linkedin.com/oauth/v2/accessToken

    base_url: str = "http://127.0.0.1:8090/linkedin"  # real: https://api.linkedin.com
    """LinkedIn's API (default: the sandbox's; the real one is https://api.linkedin.com)"""
    version: str = Field(default="202604", pattern=r"^\d{6}$", description="LinkedIn-Version, YYYYMM")


class LinkedInAdapter:
    """`consumers.boards.base.BoardAdapter` for LinkedIn."""

    destination = Destination.LINKEDIN
    max_batch = MOST_PER_CALL
    confirms = True

    def __init__(
        self,
        client: aiohttp.ClientSession,
        settings: LinkedInSettings,
        employers: EmployerRegistry | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.employers = employers or EmployerRegistry.load(settings.employers_file)

    async def send(self, updates: Sequence[PostingUpdate], token: str) -> list[ElementOutcome]:
        outcomes, sent = prepare(updates, self._element)
        if sent:
            answer = await call(
                self.client,
                self.destination,
                "POST",
                f"{self.settings.base_url}/rest/simpleJobPostings",
                headers={
                    **self._headers(token),
                    "X-Restli-Protocol-Version": "2.0.0",
                    "x-restli-method": "batch_create",
                    "Idempotency-Key": idempotency_keys([updates[i] for i, _ in sent]),
                },
                timeout_s=self.settings.timeout_s,
                json_body={"elements": [element for _, element in sent]},
            )
            answered = _element_outcomes(answer, [updates[i] for i, _ in sent])
            for (index, _), outcome in zip(sent, answered, strict=True):
                outcomes[index] = outcome
        return settled(outcomes)

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        found: dict[str, TaskOutcome] = {}
        for start in range(0, len(task_ids), TASK_IDS_PER_CALL):
            chunk = task_ids[start : start + TASK_IDS_PER_CALL]
            answer = await call(
                self.client,
                self.destination,
                "GET",
                f"{self.settings.base_url}/rest/simpleJobPostingTasks",
                headers=self._headers(token),
                timeout_s=self.settings.timeout_s,
                params=[("ids", task_id) for task_id in chunk],
            )
            found.update(_task_outcomes(answer, chunk))
        return found

    def _headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "LinkedIn-Version": self.settings.version}

    def _element(self, update: PostingUpdate) -> Element | Rejected:
        employer = self.employers.get(update.employer)
        if employer is None or employer.linkedin is None:
            (problem,) = linkedin_rules.employer_problems(update.employer, self.employers)
            return Rejected(problem.detail)
        posting = update.posting
        operation = "CREATE" if update.version == 0 else "UPDATE"
        if update.op == Op.DELETED:
            operation = "CLOSE"
        element = {
            "integrationContext": employer.linkedin.organization,
            "companyApplyUrl": posting.apply_url or employer.apply_url,
            "externalJobPostingId": update.posting_id,
            "jobPostingOperationType": operation,
            "title": posting.title,
            "description": posting.description,
            "listedAt": update.last_update_time_millis,
            "location": _location(posting) or employer.location,
            "listingType": "BASIC",
        }
        return {name: value for name, value in element.items() if value is not None}


def _location(posting: Posting) -> str | None:
    """The posting's first location in one of LinkedIn's formats ("CITY, STATE, COUNTRY",
    "POSTALCODE, COUNTRYCODE", "COUNTRY"), or a record's free text from before `locations`."""
    if not posting.locations:
        return posting.location
    place = posting.locations[0]
    parts = [place.city, place.region] if place.city else [place.postal_code]
    return ", ".join([part for part in parts if part] + [place.country])


def _element_outcomes(answer: Answer, updates: Sequence[PostingUpdate]) -> list[ElementOutcome]:
    refused = whole_call(answer, len(updates))
    if refused is not None:
        return refused
    body = answer.json()
    elements = body.get("elements") if isinstance(body, dict) else None
    if not isinstance(elements, list):
        raise answer.unintelligible("has no element statuses")
    if len(elements) != len(updates):
        raise answer.unintelligible(f"has {len(elements)} element statuses for {len(updates)} jobs")
    return [_element_outcome(e, u) for e, u in zip(elements, updates, strict=True)]


def _element_outcome(element: Any, update: PostingUpdate) -> ElementOutcome:
    status = _status(element.get("status")) if isinstance(element, dict) else None
    if status is None:
        return Unsure(f"linkedin answered this job with a status nobody can read: {excerpt(repr(element))!r}")
    if 200 <= status < 300:
        task_id = element.get("id")
        if isinstance(task_id, str) and task_id:
            return Submitted(task_id)
        return Unsure(f"linkedin accepted this job ({status}) without a task id")
    detail = f"linkedin element status {status}: {_message(element)}"
    if status == 409 and update.op == Op.DELETED:
        return Delivered()  # closed already
    if retryable_status(status):
        return Unsure(detail)
    return Rejected(detail)


def _task_outcomes(answer: Answer, asked: Sequence[str]) -> dict[str, TaskOutcome]:
    if whole_call(answer, 1) is not None:  # a poll carries no posting: its refusal is the call's
        raise CallFailed(f"{answer.board} refused the task poll ({answer.status}): {excerpt(answer.text)}")
    body = answer.json()
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, dict):
        raise answer.unintelligible("has no task results")
    found: dict[str, TaskOutcome] = {}
    for task_id in asked:
        result = results.get(task_id)
        state = result.get("status") if isinstance(result, dict) else None
        error = result.get("errorMessage") if isinstance(result, dict) else None
        error = str(error) if error else None
        if state == "PROCESSED":  # evaluated while the customer's jobs still came from a feed
            state = "FAILED" if error else "SUCCEEDED"
        if state in _TASK_STATES:  # an id left out, or a state nobody knows, stays unknown
            found[task_id] = TaskOutcome(_TASK_STATES[state], error if state == "FAILED" else None)
    return found


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
