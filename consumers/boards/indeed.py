"""Indeed Job Sync API: GraphQL `POST {base}/graphql`.

What Indeed requires (docs.indeed.com/job-sync-api/job-sync-api-guide and the schema pages
docs-plus.indeed.com/api/job/objects/CreateSourcedJobPostingInput, …JobSourceInput): a
bearer token from the client-credentials flow; `jobsIngest { createSourcedJobPostings(input:
{jobPostings: [{body, metadata}]}) }`, which creates or upserts by `metadata.jobPostingId` +
`jobSource.sourceName` ("Send all fields. The call will fail if fields are missing"): `body`
{`title`, `description`, `location` {`country`, `cityRegionPostal`}, `benefits`},
`metadata` {`jobSource` {`companyName`, `sourceName`, `sourceType`, `employerIds`
[{type, id}]}, `jobPostingId`, `datePublished` (ISO 8601), `url`}. Its answer gives each job
a `sourcedPostingId`, Indeed's own id and the only one
`expireSourcedJobsBySourcedPostingId(input: {jobs: [{sourcedPostingId}]})` takes. Errors
come as HTTP 200 with `errors[]` and `extensions.code` (BAD_USER_INPUT: the job's content),
a refused job's result being null with an error whose `path` ends at its index; HTTP status
codes only for rate limiting (429) and the network (troubleshoot-errors). Indeed answers a
missing, invalid or expired token "Client is not authorized" (FORBIDDEN); for a call as a
whole that, UNAUTHENTICATED, or HTTP 401 is `TokenRefused`. Time out after 5 s ("initiate a
timeout after 5,000 milliseconds").

What is sent follows from what Indeed holds (`consumers.job_rules`): every content is an
upsert (Indeed's own identity of a job, `jobPostingId` + `sourceName` + the client, makes a
repeat the same job: no `Idempotency-Key`, which Indeed does not read); a close expires the
job by the `sourcedPostingId` kept from its upsert ("Make sure you always save the
sourcedPostingId value"), so a job is expired even after its employer's `sourceName` changed.
Only a job whose id was never kept (a delivery state from before v3) is upserted first, in the
same call as the batch's other jobs, to learn it. Expiring a job Indeed no longer knows
("not found") is done. `datePublished` is the job's first publication (the lane keeps it; a
reactivation within Indeed's 30 days sets it anew: "To define the date that the job was
reactivated in your ATS, update the datePublished field value").

Mapping the posting (SourcedJobPostingBodyInput, …SalaryInput, …MetadataInput): one location
(`country`, `cityRegionPostal` "City, Region Postal"; a fully remote job says so with
`remoteType: FULLY_REMOTE`, the field the visible schema does not show: the sandbox's choice,
see docs/sandbox.md); `descriptionFormatting` RICH_FORMATTING for HTML ("By default, Indeed
parses job descriptions as plain text"), reduced to Indeed's tags (b, strong, em, br, p, ul,
li, headers); salary in minor units ("$102.50 -> 10250") per DAY, HOUR, WEEK, MONTH or YEAR;
`jobTypes` ("Full-time", "Part-time", …). A record from before `locations` sends its free
text with its employer's country. Before anything is built, the shared rules
(`listing.indeed_rules`) are checked on an upsert: what they refuse is never sent.

A job's status is read back with `nodes(ids: [sourcedPostingId…])` (the Job Sync guide's "List
job postings by IDs"; `JobPostStatus`: `isRejected`, `lifecycleStatus`): a success means
received ("Indeed indexes the job and makes it available, pending spam and fraud detection,
in minutes to hours"); ACTIVE is live; rejected is not listed. Indeed gives no URL for a job.

Jobs per call: Indeed's create limits fall with the batch (1 job: 4,000 calls a minute; 2 to
10: 800; more than 10: 40, per its Job Sync rate-limit table), so 10 a call — 8,000 jobs a
minute — is the default; its FAQ allows up to 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

import aiohttp
from pydantic import Field

from consumers.boards import (
    Answer,
    Element,
    call,
    excerpt,
    prepare,
    refused,
    settled,
    whole_call,
)
from consumers.boards.base import (
    BoardDown,
    BoardListing,
    CallFailed,
    Delivered,
    ElementOutcome,
    JobAction,
    JobRef,
    Operation,
    Rejected,
    TaskOutcome,
    Throttled,
    TokenRefused,
    Unsure,
)
from consumers.boards.content import completed, html_for
from consumers.boards.content import refused as rules_refusal
from consumers.boards.settings import BoardSettings
from listing import indeed_rules, iso
from listing.employers import (
    Employer,
    EmployerRegistry,
    Employers,
    FixedEmployers,
    IndeedIdentity,
    employers_at,
)
from schemas.enums import DescriptionFormat, EmploymentType, ListingStatus, Workplace
from schemas.model import Destination, Posting, Salary

UPSERT_FIELD = "createSourcedJobPostings"
EXPIRE_FIELD = "expireSourcedJobsBySourcedPostingId"
UPSERT = f"""
mutation Upsert($input: CreateSourcedJobPostingsInput!) {{
  jobsIngest {{ {UPSERT_FIELD}(input: $input) {{ results {{ jobPosting {{ sourcedPostingId }} }} }} }}
}}"""
EXPIRE = f"""
mutation Expire($input: ExpireSourcedJobsBySourcedPostingIdInput!) {{
  jobsIngest {{ {EXPIRE_FIELD}(input: $input) {{ results {{ trackingKey }} }} }}
}}"""
STATUS = """
query Status($ids: [ID!]!) {
  nodes(ids: $ids) { ... on SourcedJobPosting { sourcedPostingId status { lifecycleStatus isRejected } } }
}"""
STATUS_IDS_PER_CALL = 100
# "Supported tags: <b>, header tags, <br>, <p>, <ul>, <li>, <strong>, <em>" (formatting-guidelines)
TAGS = frozenset({"b", "strong", "em", "br", "p", "ul", "li", *(f"h{n}" for n in range(1, 7))})
JOB_TYPES = {
    EmploymentType.FULL_TIME: "Full-time",
    EmploymentType.PART_TIME: "Part-time",
    EmploymentType.CONTRACT: "Contract",
    EmploymentType.TEMPORARY: "Temporary",
    EmploymentType.INTERNSHIP: "Internship",
    EmploymentType.VOLUNTEER: "Volunteer",
}
REJECTED = "Indeed does not show the job: its job post status says it is rejected (isRejected)"
INACTIVE = "Indeed lists the job as inactive (lifecycleStatus INACTIVE)"
# Codes about what was sent (one job's, when the error's path names it).
REFUSING = {"BAD_USER_INPUT", "BAD_REQUEST", "GRAPHQL_VALIDATION_FAILED", "GRAPHQL_PARSE_FAILED", "NOT_FOUND"}
CREDENTIALS = {"UNAUTHENTICATED", "FORBIDDEN"}


class IndeedSettings(BoardSettings):
    ENV: ClassVar[str] = "JOBPOST_CONSUMER_INDEED__"
    TOKEN_PATH: ClassVar[str] = "/oauth/v2/tokens"  # real: https://apis.indeed.com/oauth/v2/tokens

    base_url: str = "http://127.0.0.1:8090/indeed"  # real: https://apis.indeed.com
    """Indeed's API (default: the sandbox's; the real one is https://apis.indeed.com)"""
    max_batch: int = Field(default=10, ge=1, le=100, description="jobs per call")


class IndeedAdapter:
    """`consumers.boards.base.BoardAdapter` for Indeed (synchronous: nothing to confirm)."""

    destination = Destination.INDEED
    confirms = False
    restates = False  # a close is an expiry by id
    renews = False  # "Jobs don't auto-expire"
    listings_per_call = STATUS_IDS_PER_CALL
    tasks_per_call = 0  # no tasks

    def __init__(
        self,
        client: aiohttp.ClientSession,
        settings: IndeedSettings,
        employers: EmployerRegistry | Employers | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.max_batch = settings.max_batch
        if isinstance(employers, EmployerRegistry):
            employers = FixedEmployers(employers)
        self.employers = employers or employers_at(settings.employers_file)

    async def send(self, actions: Sequence[JobAction], token: str) -> list[ElementOutcome]:
        """The batch's upserts in one call (a close of a job whose id was never kept among
        them, to learn it), then its expiries by id in a second call."""
        outcomes, jobs = prepare(actions, self._job)
        expiring = [
            (i, a.job_id) for i, a in enumerate(actions) if a.operation == Operation.CLOSE and a.job_id
        ]
        if jobs:
            answer = await self._mutate(UPSERT, {"jobPostings": [job for _, job in jobs]}, token)
            for (index, _), (outcome, sourced_id) in zip(
                jobs, _results(answer, len(jobs), UPSERT_FIELD), strict=True
            ):
                if actions[index].operation != Operation.CLOSE:
                    outcomes[index] = outcome
                elif sourced_id is None:
                    outcomes[index] = _closing(outcome)
                else:
                    expiring.append((index, sourced_id))
        if expiring:
            expired = await self._expire([sourced_id for _, sourced_id in expiring], token)
            for (index, _), outcome in zip(expiring, expired, strict=True):
                outcomes[index] = outcome
        return settled(outcomes)

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        return {}  # Indeed answers synchronously: nothing is ever submitted

    async def listings(self, jobs: Sequence[JobRef], token: str) -> dict[str, BoardListing]:
        """Each job's post status, by posting id; a job without a kept id is not asked about."""
        ids = {job.job_id: job.posting_id for job in jobs if job.job_id}
        found: dict[str, BoardListing] = {}
        asked = list(ids)
        for start in range(0, len(asked), STATUS_IDS_PER_CALL):
            chunk = asked[start : start + STATUS_IDS_PER_CALL]
            answer = await self._post({"query": STATUS, "variables": {"ids": chunk}}, token)
            for sourced_id, listing in _statuses(answer, chunk).items():
                found[ids[sourced_id]] = listing
        return found

    async def _expire(self, sourced_ids: list[str], token: str) -> list[ElementOutcome]:
        """The expiry call: a failure of it as a whole leaves the upserts' outcomes standing
        and makes each close unknown (retried)."""
        jobs = {"jobs": [{"sourcedPostingId": sourced_id} for sourced_id in sourced_ids]}
        try:
            answer = await self._mutate(EXPIRE, jobs, token)
            return [outcome for outcome, _ in _results(answer, len(sourced_ids), EXPIRE_FIELD)]
        except Throttled as exc:
            return [Unsure(f"the expire call: {exc}", exc.retry_after_s) for _ in sourced_ids]
        except (BoardDown, CallFailed, TokenRefused) as exc:
            return [Unsure(f"the expire call: {exc}") for _ in sourced_ids]

    async def _mutate(self, query: str, given: dict[str, Any], token: str) -> Answer:
        return await self._post({"query": query, "variables": {"input": given}}, token)

    async def _post(self, body: dict[str, Any], token: str) -> Answer:
        return await call(
            self.client,
            self.destination,
            "POST",
            f"{self.settings.base_url}/graphql",
            headers={"Authorization": f"Bearer {token}"},
            timeout_s=self.settings.timeout_s,
            json_body=body,
        )

    def _job(self, action: JobAction) -> Element | Rejected | None:
        """The job to upsert (None: a close by a kept id, which needs no upsert)."""
        if action.operation == Operation.CLOSE and action.job_id:
            return None
        update, registry = action.update, self.employers.current()
        employer = registry.get(action.employer)
        if employer is None or employer.indeed is None:
            (problem,) = indeed_rules.employer_problems(action.employer, registry)
            return Rejected(problem.detail)
        if update is None:
            return Rejected("the job's Indeed id was never kept, and no content is at hand to learn it")
        posting = completed(update, employer)
        if action.operation != Operation.CLOSE:
            refusal = rules_refusal(indeed_rules.problems(posting, update.employer, registry))
            if refusal is not None:
                return refusal
        listed_at = action.listed_at if action.listed_at is not None else update.last_update_time_millis
        return upsert_job(update.posting_id, posting, employer, employer.indeed, listed_at)


def upsert_job(
    posting_id: str, posting: Posting, employer: Employer, identity: IndeedIdentity, listed_at: int
) -> Element:
    """The posting as Indeed's job to upsert, under the employer's Indeed `identity`. Nothing
    is checked here: the adapter checks the rules first (`_job`), so that what they refuse is
    never sent; a test sends what the rules refuse to see the board refuse it."""
    published = datetime.fromtimestamp(listed_at / 1000, UTC)
    html = posting.description_format == DescriptionFormat.HTML
    body: dict[str, Any] = {
        "title": posting.title,
        "description": html_for(posting, TAGS),
        "descriptionFormatting": "RICH_FORMATTING" if html else "TEXT",
        "location": _location(posting, employer),
        "benefits": [],
    }
    if posting.salary is not None:
        body["salary"] = _salary(posting.salary)
    source = {
        "companyName": employer.company_name,
        "sourceName": identity.source_name,
        "sourceType": identity.source_type,
        "employerIds": [{"type": identity.employer_id_type, "id": identity.employer_id}],
    }
    job_type = JOB_TYPES.get(posting.employment_type)
    metadata = {
        "jobSource": source,
        "jobPostingId": posting_id,
        "jobTypes": None if job_type is None else [job_type],
        "datePublished": published.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "url": posting.apply_url,
    }
    return {"body": body, "metadata": _present(metadata)}


def _location(posting: Posting, employer: Employer) -> dict[str, Any]:
    """The posting's location (`country`, `cityRegionPostal` "City, Region Postal"; a fully
    remote job says so), or for a record from before `locations` its free text and the
    employer's country."""
    if not posting.locations:
        country = employer.indeed.country if employer.indeed else None
        return _present({"country": country, "cityRegionPostal": posting.location})
    place = posting.locations[0]
    city_region = ", ".join(part for part in (place.city, place.region) if part)
    city_region_postal = " ".join(part for part in (city_region, place.postal_code) if part)
    found: dict[str, Any] = {"country": place.country}
    if city_region_postal:
        found["cityRegionPostal"] = city_region_postal
    if posting.workplace == Workplace.REMOTE:
        found["remoteType"] = "FULLY_REMOTE"
    return found


def _salary(salary: Salary) -> dict[str, Any]:
    """Pay in the currency's minor units ("$102.50 -> 10250"); a salary "from" its minimum
    sets only `minimumMinor`."""
    scale = 10 ** iso.minor_units(salary.currency)
    found: dict[str, Any] = {
        "currency": salary.currency,
        "minimumMinor": round(salary.min * scale),
        "period": salary.period.value,
    }
    if salary.max is not None:
        found["maximumMinor"] = round(salary.max * scale)
    return found


def _statuses(answer: Answer, asked: list[str]) -> dict[str, BoardListing]:
    if whole_call(answer, 1) is not None:
        raise CallFailed(f"{answer.board} refused the status read ({answer.status}): {excerpt(answer.text)}")
    body = answer.json()
    nodes = _dig(body, "data", "nodes")
    if not isinstance(nodes, list) or len(nodes) != len(asked):
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors and isinstance(errors, list) and _codes(errors) & CREDENTIALS:
            raise TokenRefused(_describe(errors))
        raise answer.unintelligible(f"has no {len(asked)} job post statuses")
    found: dict[str, BoardListing] = {}
    for sourced_id, node in zip(asked, nodes, strict=True):
        status = _dig(node, "status")
        if not isinstance(status, dict):
            continue  # a job Indeed does not know for this client: unknown
        lifecycle = status.get("lifecycleStatus")
        if status.get("isRejected") is True:
            found[sourced_id] = BoardListing(ListingStatus.CLOSED_BY_BOARD, reason=REJECTED)
        elif lifecycle == "ACTIVE":
            found[sourced_id] = BoardListing(ListingStatus.LIVE)
        elif lifecycle == "INACTIVE":
            found[sourced_id] = BoardListing(ListingStatus.CLOSED, reason=INACTIVE)
        else:
            found[sourced_id] = BoardListing(None)  # PENDING: indexing, not decided yet
    return found


def _results(answer: Answer, count: int, field: str) -> list[tuple[ElementOutcome, str | None]]:
    """Each job's outcome, and for an upsert the `sourcedPostingId` Indeed gave it."""
    if (refusal := whole_call(answer, count)) is not None:
        return [(outcome, None) for outcome in refusal]
    body = answer.json()
    if not isinstance(body, dict):
        raise answer.unintelligible("is not a GraphQL answer")
    errors = body.get("errors") or []
    if not (isinstance(errors, list) and all(isinstance(e, dict) for e in errors)):
        raise answer.unintelligible("has errors of an unknown shape")
    results = _dig(body, "data", "jobsIngest", field, "results")
    if results is None:
        return _call_refused(answer, errors, count)
    if not isinstance(results, list) or len(results) != count:
        raise answer.unintelligible(f"has no {count} results")
    per_job: dict[int, list[dict[str, Any]]] = {}
    for error in errors:
        if (index := _index(error)) is not None and 0 <= index < count:
            per_job.setdefault(index, []).append(error)
    unplaced = [e for e in errors if _index(e) is None]
    return [_outcome(result, per_job.get(i, []), unplaced, field) for i, result in enumerate(results)]


def _outcome(
    result: Any, errors: list[dict[str, Any]], unplaced: list[dict[str, Any]], field: str
) -> tuple[ElementOutcome, str | None]:
    if errors:
        detail = _describe(errors)
        if field == EXPIRE_FIELD and _unknown_job(errors):
            return Delivered(gone=True), None  # nothing left to expire
        return (Rejected(detail) if _codes(errors) & REFUSING else Unsure(detail)), None
    if field == UPSERT_FIELD:
        sourced_id = _dig(result, "jobPosting", "sourcedPostingId")
        if isinstance(sourced_id, str) and sourced_id:
            return Delivered(sourced_id), sourced_id
    elif isinstance(result, dict) and result.get("trackingKey"):
        return Delivered(), None
    why = _describe(unplaced) if unplaced else f"no result and no error for this job: {excerpt(repr(result))}"
    return Unsure(why), None


def _call_refused(
    answer: Answer, errors: list[dict[str, Any]], count: int
) -> list[tuple[ElementOutcome, str | None]]:
    """No results: the call as a whole was refused, which the errors' codes say why."""
    if not errors:
        raise answer.unintelligible("has neither results nor errors")
    codes, detail = _codes(errors), _describe(errors)
    if codes & CREDENTIALS:
        raise TokenRefused(detail)
    if codes & REFUSING:
        return [(outcome, None) for outcome in refused(detail, count)]
    raise CallFailed(detail)


def _closing(outcome: ElementOutcome) -> ElementOutcome:  # a close whose job id was never kept
    """A close whose upsert (to learn the job's sourcedPostingId) did not go through."""
    why = "to expire the job Indeed must name its sourcedPostingId, and its upsert"
    if isinstance(outcome, Rejected):
        return Rejected(f"{why} was refused: {outcome.reason}")
    if isinstance(outcome, Unsure):
        return Unsure(f"{why} failed: {outcome.reason}", outcome.retry_after_s)
    return Unsure(f"{why} gave no id")


def _unknown_job(errors: list[dict[str, Any]]) -> bool:
    """An expiry refused because Indeed holds no such job (NOT_FOUND, or its message says
    so): the job is not live, which is what the close wanted."""
    return "NOT_FOUND" in _codes(errors) or any(
        "no job" in str(e.get("message", "")).lower() or "not found" in str(e.get("message", "")).lower()
        for e in errors
    )


def _index(error: dict[str, Any]) -> int | None:
    path = error.get("path")
    if isinstance(path, list) and "results" in path:
        after = path[path.index("results") + 1 :]
        if after and isinstance(after[0], int) and not isinstance(after[0], bool):
            return after[0]
    return None


def _codes(errors: list[dict[str, Any]]) -> set[str]:
    return {str(_dig(e, "extensions", "code") or "INTERNAL_SERVER_ERROR") for e in errors}


def _describe(errors: list[dict[str, Any]]) -> str:
    return f"indeed errors {sorted(_codes(errors))}: {excerpt(str(errors[0].get('message', '')))}"


def _dig(value: Any, *names: str) -> Any:
    for name in names:
        value = value.get(name) if isinstance(value, dict) else None
    return value


def _present(record: dict[str, Any]) -> dict[str, Any]:
    """Leave out what is missing, for the board to refuse as it does."""
    return {name: value for name, value in record.items() if value is not None}
