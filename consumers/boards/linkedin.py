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

What is sent follows from what LinkedIn holds (`consumers.job_rules`), never from the
version number: CREATE until a CREATE's task succeeded, UPDATE after, CLOSE only for a job it
holds; RENEW (a full job body, "extend the expiry date of the listed job by 30 days",
update-renew-jobs) before its lifetime lapses. A CLOSE and a RENEW restate the job's content:
"a copy of the Create … request with jobPostingOperationType set to CLOSE" (the OpenAPI file).
LinkedIn reads no `Idempotency-Key`; a repeat is judged by its identity of a job (the partner
and `externalJobPostingId`): a CREATE repeated after its answer was lost FAILS in its task
("Trying to create a job with same partnerIdentifier already exists … LinkedIn job id: {n}"),
read here as `JobExists` (the lane sends the same content as an UPDATE); an UPDATE or RENEW
of a job never created ("… is not allowed for a non-existing job") as `NoJob` (a CREATE next);
of a closed one as a refusal that says the job is closed.

The job's status is read back from the job posting status API (`GET {base}{status_path}
?ids=<externalJobPostingId>&…`, LinkedIn's Java SDK; at most 100 ids a call and a query
string within 4 KB, check-job-posting-status): LISTED (with `jobPostingUrl`), NOT_LISTED with
`listingStatusDetail` (closed by the partner, expired, or closed by LinkedIn with its reason),
IN_PROGRESS.

Mapping the posting (job-posting-api-schema): the first location is `location` ("CITY, STATE,
COUNTRY", "CITY, COUNTRY", "POSTALCODE, COUNTRYCODE", a remote job's "COUNTRY"), the others
`alternateLocations` (US ones as "City", others "City, CC"); `workplaceTypes` one of On-site,
Hybrid, Remote; `employmentStatus` (OTHER is left out: "LinkedIn standardizes to the closest
matched value"); a salary is `compensation` BASE_SALARY with a range (no `end` for a salary
"from" its minimum); HTML reduced to LinkedIn's tags ("`<b>, <strong>` `<u>` `<i>` `<br>`
`<p>` `<ul>` `<li>`. Other HTML tags will be stripped out"); `listedAt` is the job's first
listing date, kept by the lane. A record from before `locations` sends its free text (or its
employer's) as it is. Before anything is built, the shared rules (`listing.linkedin_rules`)
are checked on a CREATE or UPDATE: what they refuse is never sent.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlencode

import aiohttp
from pydantic import Field

from consumers.boards import Answer, Element, call, excerpt, prepare, settled, whole_call
from consumers.boards.base import (
    BoardListing,
    CallFailed,
    Delivered,
    ElementOutcome,
    JobAction,
    JobRef,
    Operation,
    Rejected,
    Submitted,
    TaskFailure,
    TaskOutcome,
    TaskState,
    Unsure,
)
from consumers.boards.content import completed, html_for, refused
from consumers.boards.settings import BoardSettings
from listing import iso, linkedin_rules
from listing.employers import EmployerRegistry, Employers, FixedEmployers, employers_at
from runtime.http import retryable_status
from schemas.enums import EmploymentType, ListingStatus, SalaryPeriod, Workplace
from schemas.model import Destination, Posting, PostingLocation, Salary

MOST_PER_CALL = 100
TASK_IDS_PER_CALL = 50
STATUS_IDS_PER_CALL = 100  # "Maximum limit of 100 jobs are supported per batch request"
QUERY_MAX_BYTES = 4000  # "the query string is limited to a maximum length of 4KB", with room
MOST_ALTERNATES = 7
JOB_URN = "urn:li:jobPosting:"
# "supported for description and skillsDescription: <b>, <strong> <u> <i> <br> <p> <ul> <li>"
TAGS = frozenset({"b", "strong", "u", "i", "br", "p", "ul", "li"})
WORKPLACE_TYPES = {Workplace.ON_SITE: "On-site", Workplace.HYBRID: "Hybrid", Workplace.REMOTE: "Remote"}
PERIODS = {
    SalaryPeriod.HOUR: "HOURLY",
    SalaryPeriod.DAY: "DAILY",
    SalaryPeriod.WEEK: "WEEKLY",
    SalaryPeriod.MONTH: "MONTHLY",
    SalaryPeriod.YEAR: "YEARLY",
}
_TASK_STATES = {
    "IN_PROGRESS": TaskState.IN_PROGRESS,
    "SUCCEEDED": TaskState.SUCCEEDED,
    "FAILED": TaskState.FAILED,
}
# check-job-taskstatus's words for what a failed task says of the job.
_DUPLICATE = re.compile(r"same partnerIdentifier already exists.*?LinkedIn job id: *(\d+)", re.S)
_NOT_EXISTING = "is not allowed for a non-existing job"
_CLOSED = "is not allowed for a closed job"


class LinkedInSettings(BoardSettings):
    ENV: ClassVar[str] = "JOBPOST_CONSUMER_LINKEDIN__"
    TOKEN_PATH: ClassVar[str] = "/oauth/v2/accessToken"  # real: https://www.linkedin.com/oauth/v2/accessToken

    base_url: str = "http://127.0.0.1:8090/linkedin"  # real: https://api.linkedin.com
    """LinkedIn's API (default: the sandbox's; the real one is https://api.linkedin.com)"""
    version: str = Field(default="202604", pattern=r"^\d{6}$", description="LinkedIn-Version, YYYYMM")
    status_path: str = Field(
        default="/v2/jobPostingStatus",
        description="the job posting status API under base_url (the path LinkedIn's SDK uses)",
    )
    job_lifetime_s: float = Field(
        default=180 * 86_400.0, gt=0, description="how long a basic job lives from its listedAt"
    )
    renewal_s: float = Field(default=30 * 86_400.0, gt=0, description="what a RENEW adds to a job's life")
    records_per_day: int | None = Field(
        default=60_000,
        ge=1,
        description="jobs posted a day, for the whole group (LinkedIn's premium sync limit: 60,000 records a "
        "day, reset at 00:00 UTC)",
    )
    requests_per_day: int | None = Field(
        default=100_000,
        ge=1,
        description="simpleJobPostings calls a day, for the whole group (LinkedIn's premium sync limit: "
        "100,000 requests a day)",
    )
    task_status_calls_per_day: int | None = Field(
        default=300_000,
        ge=1,
        description="simpleJobPostingTasks calls a day, for the whole group (LinkedIn's check job task "
        "status page: 300,000 calls a day)",
    )


class LinkedInAdapter:
    """`consumers.boards.base.BoardAdapter` for LinkedIn."""

    destination = Destination.LINKEDIN
    max_batch = MOST_PER_CALL
    confirms = True
    restates = True
    renews = True
    listings_per_call = STATUS_IDS_PER_CALL
    tasks_per_call = TASK_IDS_PER_CALL

    def __init__(
        self,
        client: aiohttp.ClientSession,
        settings: LinkedInSettings,
        employers: EmployerRegistry | Employers | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        if isinstance(employers, EmployerRegistry):
            employers = FixedEmployers(employers)
        self.employers = employers or employers_at(settings.employers_file)

    async def send(self, actions: Sequence[JobAction], token: str) -> list[ElementOutcome]:
        outcomes, sent = prepare(actions, self._element)
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
                },
                timeout_s=self.settings.timeout_s,
                json_body={"elements": [element for _, element in sent]},
            )
            answered = _element_outcomes(answer, [actions[i] for i, _ in sent])
            for (index, _), outcome in zip(sent, answered, strict=True):
                outcomes[index] = outcome
        return settled(outcomes)

    async def listings(self, jobs: Sequence[JobRef], token: str) -> dict[str, BoardListing]:
        """The job posting status of each job, by its `externalJobPostingId` (the posting id)."""
        found: dict[str, BoardListing] = {}
        for chunk in _chunks([job.posting_id for job in jobs], STATUS_IDS_PER_CALL, QUERY_MAX_BYTES):
            found.update(_listings(await self._by_ids(self.settings.status_path, chunk, token), chunk))
        return found

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        found: dict[str, TaskOutcome] = {}
        for start in range(0, len(task_ids), TASK_IDS_PER_CALL):
            chunk = task_ids[start : start + TASK_IDS_PER_CALL]
            answer = await self._by_ids("/rest/simpleJobPostingTasks", chunk, token)
            found.update(_task_outcomes(answer, chunk))
        return found

    async def _by_ids(self, path: str, ids: Sequence[str], token: str) -> Answer:
        """A GET of LinkedIn's that names what it asks about as repeated `ids` parameters."""
        return await call(
            self.client,
            self.destination,
            "GET",
            f"{self.settings.base_url}{path}",
            headers=self._headers(token),
            timeout_s=self.settings.timeout_s,
            params=[("ids", one) for one in ids],
        )

    def _headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "LinkedIn-Version": self.settings.version}

    def _element(self, action: JobAction) -> Element | Rejected:
        update, registry = action.update, self.employers.current()
        employer = registry.get(action.employer)
        if employer is None or employer.linkedin is None:
            (problem,) = linkedin_rules.employer_problems(action.employer, registry)
            return Rejected(problem.detail)
        if update is None:  # never asked of LinkedIn: every action of it restates the job
            return Rejected(
                f"a {action.operation} of LinkedIn's job needs the job's content, and none is kept"
            )
        posting = completed(update, employer)
        if action.operation in (Operation.CREATE, Operation.UPDATE):
            refusal = refused(linkedin_rules.problems(posting, update.employer, registry))
            if refusal is not None:
                return refusal
        listed_at = action.listed_at if action.listed_at is not None else update.last_update_time_millis
        return job_element(
            action.operation, update.posting_id, posting, employer.linkedin.organization, listed_at
        )


def job_element(
    operation: Operation, posting_id: str, posting: Posting, organization: str, listed_at: int
) -> Element:
    """The posting as LinkedIn's element of `operation`, on the company page `organization`.
    Nothing is checked here: the adapter checks the rules first (`_element`), so that what
    they refuse is never sent; a test sends what the rules refuse to see the board refuse it."""
    location, alternates = _locations(posting)
    element = {
        "integrationContext": organization,
        "companyApplyUrl": posting.apply_url,
        "externalJobPostingId": posting_id,
        "jobPostingOperationType": operation.value,
        "title": posting.title,
        "description": html_for(posting, TAGS),
        "listedAt": listed_at,
        "location": location,
        "alternateLocations": alternates or None,
        "workplaceTypes": [WORKPLACE_TYPES[posting.workplace]],
        "employmentStatus": None
        if posting.employment_type == EmploymentType.OTHER
        else posting.employment_type.value,
        "compensation": None if posting.salary is None else _compensation(posting.salary),
        "listingType": "BASIC",
    }
    return {name: value for name, value in element.items() if value is not None}


def _locations(posting: Posting) -> tuple[str | None, list[str]]:
    """The first location in one of LinkedIn's formats, and the others as alternate
    locations (at most seven); a record's free text from before `locations` as it is."""
    if not posting.locations:
        return posting.location, []
    remote = posting.workplace == Workplace.REMOTE
    first, *others = posting.locations
    return _place(first, remote), [_alternate(place, remote) for place in others[:MOST_ALTERNATES]]


def _place(place: PostingLocation, remote: bool) -> str:
    """ "CITY, STATE, COUNTRY", "CITY, COUNTRY", "POSTALCODE, COUNTRYCODE"; a remote job's
    "COUNTRY" when it names no city."""
    if place.city:
        return ", ".join(part for part in (place.city, place.region, place.country) if part)
    if place.postal_code and not remote:
        return f"{place.postal_code}, {place.country}"
    return place.country


def _alternate(place: PostingLocation, remote: bool) -> str:
    """ "US entries 'City', non-US 'City, Country/Region'"; otherwise a location's format."""
    if place.city and place.country == "US":
        return place.city
    if place.city:
        return f"{place.city}, {place.country}"
    return _place(place, remote)


def _compensation(salary: Salary) -> dict[str, Any]:
    """BASE_SALARY over the salary's period; amounts as "real number strings" in the
    currency's minor unit's precision."""
    decimals = iso.minor_units(salary.currency)

    def money(amount: float) -> dict[str, str]:
        return {"currencyCode": salary.currency, "amount": f"{amount:.{decimals}f}"}

    value: dict[str, Any] = {"range": {"start": money(salary.min)}}
    if salary.max is not None:
        value["range"]["end"] = money(salary.max)
    return {"compensations": [{"type": "BASE_SALARY", "period": PERIODS[salary.period], "value": value}]}


def _chunks(ids: list[str], most: int, query_bytes: int) -> list[list[str]]:
    """`ids` in groups of at most `most` whose query string (`ids=…&ids=…`) stays within
    `query_bytes`."""
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for posting_id in ids:
        cost = len(urlencode([("ids", posting_id)])) + 1
        if current and (len(current) >= most or size + cost > query_bytes):
            chunks.append(current)
            current, size = [], 0
        current.append(posting_id)
        size += cost
    if current:
        chunks.append(current)
    return chunks


def _element_outcomes(answer: Answer, actions: Sequence[JobAction]) -> list[ElementOutcome]:
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
        if state == "FAILED":
            found[task_id] = _failed(error)
        elif state in _TASK_STATES:  # an id left out, or a state nobody knows, stays unknown
            job = result.get("jobPosting") if isinstance(result, dict) else None
            found[task_id] = TaskOutcome(
                _TASK_STATES[state], job_id=job if isinstance(job, str) and job else None
            )
    return found


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


def _listings(answer: Answer, asked: Sequence[str]) -> dict[str, BoardListing]:
    if whole_call(answer, 1) is not None:  # a status read carries no posting: its refusal is the call's
        raise CallFailed(f"{answer.board} refused the status read ({answer.status}): {excerpt(answer.text)}")
    body = answer.json()
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, dict):
        raise answer.unintelligible("has no job posting statuses")
    found: dict[str, BoardListing] = {}
    for posting_id in asked:
        result = results.get(posting_id)
        if isinstance(result, dict):
            found[posting_id] = _listing(result)
    return found


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
