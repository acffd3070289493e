"""The API's refusal table (tests/refusal_cases.py) run against the sandbox: the boards refuse
each case too, not only our checks.

Each case's body becomes what our adapter would send its board: the API's own conversion of
a body to a posting (`to_posting`), then the adapter's own element or job
(`consumers.boards.linkedin.request.job_element`, `.indeed.request.upsert_job`). It passes neither the API's
write-time check nor the adapter's check before sending, since what the table says they
refuse is what the board must refuse here. The sandbox, in process, refuses it where the board
says so (LinkedIn: in the element's answer, or later as a FAILED task; Indeed: in the call's
answer), in the board's words. The listable posting itself is sent too and taken by both, so
the table cannot pass by the sandbox refusing everything.

Two kinds of case have no request of the adapter's, and are sent as what the board would get:
- an employer with no identity at the board: the adapter builds nothing without one, so the
  board gets the request without it (LinkedIn: no `integrationContext`; Indeed: a `jobSource`
  without its identity's `sourceName`, `sourceType` and `employerIds`);
- two locations at Indeed: an Indeed job has one `location` object, and the adapter would
  send the first alone (a job listed in one city: the mis-post the API's rule prevents), so the
  case is sent as the two locations in the one `location`, a list where an object goes.

One case the sandbox takes (`TAKEN`): a region with no city or postal code at Indeed. Indeed's
documents ask for "City, region, and postal code" and refuse only a missing
`cityRegionPostal`; telling a region from a city would need a gazetteer, which the sandbox
does not have. Whether Indeed refuses "Bavaria" is a question its documents do not answer, so
our rule is the stricter party there."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from consumers.boards.base import Operation
from consumers.boards.indeed.request import upsert_job
from consumers.boards.linkedin.request import job_element
from listing.employers import Employer
from producer_api.http.models import PostingIn
from producer_api.http.posting_body import to_posting
from schemas.model import Posting
from tests.refusal_cases import CASES, LISTABLE, REGISTRY, RefusalCase
from tests.unit.jobpost_dev.sandbox.harness import NOW_MS, Sandbox, scenario

EMPLOYER = REGISTRY.employers["default"]  # the identities the sandbox knows
LISTED_AT = NOW_MS - 60_000
# Where LinkedIn refuses each case ("element": in the call's answer; "task": its task FAILED),
# and its words.
LINKEDIN_WORDS = {
    "linkedin-description-under-100": ("task", "The description length should be at least 100 characters"),
    "linkedin-html-description-under-100-visible": (
        "task",
        "Invalid Field: /description; Drop Message: The description length should be at least 100",
    ),
    "linkedin-description-over-25000-as-sent": ("task", "between 100 - 25,000 characters"),
    "linkedin-apply-url-missing": ("element", "ERROR :: /companyApplyUrl :: field is required"),
    "linkedin-on-site-location-without-city-or-postal-code": ("task", "Invalid Field: /city;"),
    "linkedin-hybrid-location-country-only": ("task", "Invalid Field: /city;"),
    "linkedin-alternate-location-country-only": ("task", "Invalid Field: /alternateLocations;"),
    "linkedin-employer-without-linkedin-organization": (
        "element",
        "Either context or company or companyPageUrl or companyName must be provided",
    ),
}
# Indeed's words for each case, a BAD_USER_INPUT error on the job.
INDEED_WORDS = {
    "indeed-title-over-75": "String length exceeded: body.title is 79 characters",
    "indeed-description-blank": "Missing required field: body.description",
    "indeed-description-over-65000-bytes": "String length exceeded: body.description",
    "indeed-apply-url-missing": "Missing required field: metadata.url",
    "indeed-two-locations": "Invalid value for body.location: a list",
    "indeed-salary-zero-in-cents": "Invalid amount for body.salary.minimumMinor: 0",
    "indeed-salary-zero-in-yen": "Invalid amount for body.salary.minimumMinor: 0",
    "indeed-employer-without-indeed-identity": "Missing required field: metadata.jobSource.sourceName",
}
TAKEN = {"indeed-on-site-location-without-city-or-postal-code": "cityRegionPostal 'Bavaria': a region alone"}
CONTROL = RefusalCase("the-listable-posting", "", "", "")
LINKEDIN_CASES = [c for c in CASES if c.board == "linkedin"]
INDEED_CASES = [c for c in CASES if c.board == "indeed"]


def case_id(case: RefusalCase) -> str:
    return case.id if case.board else "the-listable-posting"


def posting_of(case: RefusalCase) -> Posting:
    """The posting the API makes of the case's body (past its check of the boards' rules)."""
    return to_posting(PostingIn.model_validate(case.body()))


def linkedin_element(case: RefusalCase) -> dict[str, Any]:
    assert EMPLOYER.linkedin is not None
    element = job_element(
        Operation.CREATE, case.id, posting_of(case), EMPLOYER.linkedin.organization, LISTED_AT
    )
    if case.code == "employer_not_configured":
        del element["integrationContext"]  # no LinkedIn organization to post under
    return element


def indeed_job(case: RefusalCase) -> dict[str, Any]:
    posting = posting_of(case)
    job = upsert(case.id, posting, EMPLOYER)
    if case.code == "employer_not_configured":
        for field in ("sourceName", "sourceType", "employerIds"):  # the Indeed identity's
            del job["metadata"]["jobSource"][field]
    if case.code == "too_many" and case.pointer == "/locations":
        job["body"]["location"] = [
            upsert(case.id, dataclasses.replace(posting, locations=(place,)), EMPLOYER)["body"]["location"]
            for place in posting.locations
        ]
    return job


def upsert(posting_id: str, posting: Posting, employer: Employer) -> dict[str, Any]:
    assert employer.indeed is not None
    return upsert_job(posting_id, posting, employer, employer.indeed, LISTED_AT)


async def linkedin_verdict(s: Sandbox, element: dict[str, Any]) -> tuple[str | None, str]:
    """Where LinkedIn refuses the element, and its words; (None, "") when it lists it. A task
    still in progress is waited for as a client would, the sandbox's clock moved on."""
    (answer,) = await s.elements(element)
    if answer["status"] != 202:
        return "element", answer["error"]["message"]
    for _ in range(10):
        task = await s.task(answer["id"])
        if task["status"] != "IN_PROGRESS":
            break
        await s.advance_clock(60)
    if task["status"] == "SUCCEEDED":
        jobs = await s.get("/_sandbox/linkedin/jobs", posting_id=element["externalJobPostingId"])
        assert [job["status"] for job in jobs["jobs"]] == ["live"], jobs
        return None, ""
    assert task["status"] == "FAILED", task
    return "task", str(task.get("errorMessage", ""))


async def indeed_verdict(s: Sandbox, job: dict[str, Any]) -> list[str] | None:
    """Indeed's errors for the job (None: it took it)."""
    answer = await s.upsert(job)
    (result,) = answer["data"]["jobsIngest"]["createSourcedJobPostings"]["results"]
    if "errors" not in answer:
        assert result["jobPosting"]["sourcedPostingId"], answer
        return None
    assert result == {"jobPosting": None}, answer
    assert {e["extensions"]["code"] for e in answer["errors"]} == {"BAD_USER_INPUT"}, answer
    return [e["message"] for e in answer["errors"]]


@pytest.mark.parametrize("case", [CONTROL, *LINKEDIN_CASES], ids=case_id)
def test_linkedin_refuses_each_case_of_the_table_where_and_as_it_says(case):
    where, words = scenario(lambda s: linkedin_verdict(s, linkedin_element(case)))
    if case is CONTROL:
        assert (where, words) == (None, ""), words
        return
    assert (where, words) != (None, ""), "the sandbox listed it"
    expected_where, expected_words = LINKEDIN_WORDS[case.id]
    assert where == expected_where and expected_words in words, (where, words)


@pytest.mark.parametrize("case", [CONTROL, *INDEED_CASES], ids=case_id)
def test_indeed_refuses_each_case_of_the_table_as_it_says(case):
    errors = scenario(lambda s: indeed_verdict(s, indeed_job(case)))
    if case is CONTROL or case.id in TAKEN:
        assert errors is None, errors
        return
    assert errors is not None, "the sandbox took it"
    assert any(INDEED_WORDS[case.id] in error for error in errors), errors


def test_every_case_is_sent_and_all_but_one_are_refused():
    ids = {c.id for c in CASES}
    assert set(LINKEDIN_WORDS) | set(INDEED_WORDS) | set(TAKEN) == ids
    assert not set(INDEED_WORDS) & set(TAKEN)
    refused = {
        board: sum(c.id not in TAKEN for c in CASES if c.board == board) for board in ("linkedin", "indeed")
    }
    assert (len(LINKEDIN_CASES), refused["linkedin"]) == (8, 8)
    assert (len(INDEED_CASES), refused["indeed"]) == (9, 8)


def test_the_control_row_is_the_tables_own_listable_posting():
    assert CONTROL.body() == LISTABLE
