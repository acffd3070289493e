"""What this code asks of LinkedIn: a posting as a job element of `simpleJobPostings`, and
the ids its reads (task status, job posting status) ask about.

What LinkedIn requires (learn.microsoft.com/linkedin/talent/job-postings/api/create-jobs,
and the OpenAPI file github.com/linkedin-developers/job-posting-development-tools,
job_posting_v2.yaml): a bearer token from the client-credentials flow; headers
`x-restli-method: batch_create`, `LinkedIn-Version: YYYYMM` (the /rest endpoints);
`{elements: [...]}` of at most 100 jobs, never two of one `externalJobPostingId`; per job
`integrationContext` (the company's urn:li:organization), `companyApplyUrl`,
`externalJobPostingId`, `jobPostingOperationType` (CREATE, UPDATE, RENEW, CLOSE — a close
re-posts the job with CLOSE), `title` (≤ 200), `description` (≤ 25,000), `listedAt` (epoch
ms, not in the future) and `location` ("CITY, STATE", "CITY, COUNTRY", …); `listingType`
BASIC for a free job. Task ids are asked for as `ids=<urn>&ids=<urn>` (the documented form),
at most 50 per GET so the query stays under LinkedIn's 4 KB (check-job-posting-status); job
posting statuses at most 100 ids a call, within the same 4 KB.

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

from typing import Any
from urllib.parse import urlencode

from consumers.boards import Element
from consumers.boards.base import JobAction, Operation, Rejected
from consumers.boards.content import completed, html_for, refused
from listing import iso, linkedin_rules
from listing.employers import EmployerRegistry
from schemas.enums import EmploymentType, SalaryPeriod, Workplace
from schemas.model import Posting, PostingLocation, Salary

MOST_PER_CALL = 100
TASK_IDS_PER_CALL = 50
STATUS_IDS_PER_CALL = 100  # "Maximum limit of 100 jobs are supported per batch request"
QUERY_MAX_BYTES = 4000  # "the query string is limited to a maximum length of 4KB", with room
MOST_ALTERNATES = 7
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


def element_for(action: JobAction, registry: EmployerRegistry) -> Element | Rejected:
    """The element to send for `action`, or its refusal (never sent): an employer without a
    LinkedIn account, no content to restate, or content the shared rules refuse."""
    update = action.update
    employer = registry.get(action.employer)
    if employer is None or employer.linkedin is None:
        (problem,) = linkedin_rules.employer_problems(action.employer, registry)
        return Rejected(problem.detail)
    if update is None:  # never asked of LinkedIn: every action of it restates the job
        return Rejected(f"a {action.operation} of LinkedIn's job needs the job's content, and none is kept")
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
    Nothing is checked here: the adapter checks the rules first (`element_for`), so that what
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


def id_chunks(ids: list[str], most: int, query_bytes: int) -> list[list[str]]:
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
