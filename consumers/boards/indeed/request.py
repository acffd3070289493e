"""What this code asks of Indeed: the GraphQL operations, and a posting as Indeed's job to
upsert.

What Indeed requires (docs.indeed.com/job-sync-api/job-sync-api-guide and the schema pages
docs-plus.indeed.com/api/job/objects/CreateSourcedJobPostingInput, …JobSourceInput): a
bearer token from the client-credentials flow; `jobsIngest { createSourcedJobPostings(input:
{jobPostings: [{body, metadata}]}) }`, which creates or upserts by `metadata.jobPostingId` +
`jobSource.sourceName` ("Send all fields. The call will fail if fields are missing"): `body`
{`title`, `description`, `location` {`country`, `cityRegionPostal`}, `benefits`},
`metadata` {`jobSource` {`companyName`, `sourceName`, `sourceType`, `employerIds`
[{type, id}]}, `jobPostingId`, `datePublished` (ISO 8601), `url`}; a close is
`expireSourcedJobsBySourcedPostingId(input: {jobs: [{sourcedPostingId}]})`; a job's status
`nodes(ids: [sourcedPostingId…])` (the Job Sync guide's "List job postings by IDs").

Mapping the posting (SourcedJobPostingBodyInput, …SalaryInput, …MetadataInput): one location
(`country`, `cityRegionPostal` "City, Region Postal"; a fully remote job says so with
`remoteType: FULLY_REMOTE`, the field the visible schema does not show: the sandbox's choice,
see docs/sandbox.md); `descriptionFormatting` RICH_FORMATTING for HTML ("By default, Indeed
parses job descriptions as plain text"), reduced to Indeed's tags (b, strong, em, br, p, ul,
li, headers); salary in minor units ("$102.50 -> 10250") per DAY, HOUR, WEEK, MONTH or YEAR;
`jobTypes` ("Full-time", "Part-time", …). A record from before `locations` sends its free
text with its employer's country. `datePublished` is the job's first publication (the lane
keeps it; a reactivation within Indeed's 30 days sets it anew: "To define the date that the
job was reactivated in your ATS, update the datePublished field value"). Before anything is
built, the shared rules (`listing.indeed_rules`) are checked on an upsert: what they refuse is
never sent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from consumers.boards import Element
from consumers.boards.base import JobAction, Operation, Rejected
from consumers.boards.content import completed, html_for, refused
from listing import indeed_rules, iso
from listing.employers import Employer, EmployerRegistry, IndeedIdentity
from schemas.enums import DescriptionFormat, EmploymentType, Workplace
from schemas.model import Posting, Salary

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


def job_for(action: JobAction, registry: EmployerRegistry) -> Element | Rejected | None:
    """The job to upsert for `action`, or its refusal (never sent); None: a close by a kept
    id, which needs no upsert."""
    if action.operation == Operation.CLOSE and action.job_id:
        return None
    update = action.update
    employer = registry.get(action.employer)
    if employer is None or employer.indeed is None:
        (problem,) = indeed_rules.employer_problems(action.employer, registry)
        return Rejected(problem.detail)
    if update is None:
        return Rejected("the job's Indeed id was never kept, and no content is at hand to learn it")
    posting = completed(update, employer)
    if action.operation != Operation.CLOSE:
        refusal = refused(indeed_rules.problems(posting, update.employer, registry))
        if refusal is not None:
            return refusal
    listed_at = action.listed_at if action.listed_at is not None else update.last_update_time_millis
    return upsert_job(update.posting_id, posting, employer, employer.indeed, listed_at)


def upsert_job(
    posting_id: str, posting: Posting, employer: Employer, identity: IndeedIdentity, listed_at: int
) -> Element:
    """The posting as Indeed's job to upsert, under the employer's Indeed `identity`. Nothing
    is checked here: the adapter checks the rules first (`job_for`), so that what they refuse
    is never sent; a test sends what the rules refuse to see the board refuse it."""
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


def _present(record: dict[str, Any]) -> dict[str, Any]:
    """Leave out what is missing, for the board to refuse as it does."""
    return {name: value for name, value in record.items() if value is not None}
