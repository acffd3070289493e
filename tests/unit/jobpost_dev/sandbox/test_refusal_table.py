"""One table of what each board refuses, run against the sandbox through plain HTTP calls, as
a board adapter (or the API's own refusal table) reaches it: each case a job the board's
documents refuse, where the board says so (LinkedIn: in the call's answer, or later in the
job's task; Indeed: in the call's answer), and the board's words. The first rows of each
board are jobs it takes, so the table cannot pass by refusing everything."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.jobpost_dev.sandbox.harness import DESCRIPTION, NOW_MS, Sandbox, element, indeed_job, scenario

FORTY = "Builds the payment services of a bank. " * 3  # 117 characters

# (case, element, where LinkedIn refuses it: None (it lists it), "element" or "task", status, words)
LINKEDIN: list[tuple[str, dict[str, Any], str | None, Any, str]] = [
    ("a job LinkedIn lists", element(), None, "SUCCEEDED", ""),
    ("CITY, STATE", element(location="San Francisco, CA"), None, "SUCCEEDED", ""),
    ("CITY, COUNTRY", element(location="Berlin, Germany"), None, "SUCCEEDED", ""),
    ("POSTALCODE, COUNTRYCODE", element(location="10115, DE"), None, "SUCCEEDED", ""),
    ("COUNTRY for a Remote job", element(location="DE", workplaceTypes=["Remote"]), None, "SUCCEEDED", ""),
    ("100 characters of text in HTML", element(description=f"<p>{FORTY[:100]}</p>"), None, "SUCCEEDED", ""),
    (
        "description under 100 characters",
        element(description="Builds payment services."),
        "task",
        "FAILED",
        "Invalid Field: /description; Drop Message: The description length should be at least 100 characters",
    ),
    (
        "description under 100 characters of text, tags apart",
        element(description="<p><b>" + "x" * 60 + "</b></p>" + "<br>" * 20),
        "task",
        "FAILED",
        "The description length should be at least 100 characters",
    ),
    (
        "description over 25,000 characters",
        element(description=DESCRIPTION + "x" * 25_000),
        "task",
        "FAILED",
        "between 100 - 25,000 characters",
    ),
    (
        "location Remote",
        element(location="Remote"),
        "task",
        "FAILED",
        "Invalid Field: /city; \nInvalid Field: /postalCode;",
    ),
    (
        "a country alone for an on-site job",
        element(location="Germany"),
        "task",
        "FAILED",
        "Invalid Field: /city;",
    ),
    ("a city alone", element(location="Berlin"), "task", "FAILED", "Invalid Field: /geoLocation;"),
    (
        "a street address",
        element(location="1 Main Street, Austin"),
        "task",
        "FAILED",
        "Invalid Field: /city;",
    ),
    (
        "a remote job without its country",
        element(location="Austin, Texas", workplaceTypes=["Remote"]),
        "task",
        "FAILED",
        "/city;",
    ),
    (
        "an alternate location that is a country, for an on-site job",
        element(alternateLocations=["FR"]),
        "task",
        "FAILED",
        "Invalid Field: /alternateLocations;",
    ),
    ("a title of spaces", element(title="   "), "element", 422, "ERROR :: /title :: field is required"),
    (
        "an alternate location out of format",
        element(alternateLocations=["Anywhere"]),
        "task",
        "FAILED",
        "Invalid Field: /alternateLocations;",
    ),
    (
        "an UPDATE of a job never created",
        element("never", "UPDATE"),
        "task",
        "FAILED",
        "Operation type `UPDATE` is not allowed for a non-existing job of partner urn",
    ),
    (
        "companyApplyUrl missing",
        element(companyApplyUrl=None),
        "element",
        422,
        "ERROR :: /companyApplyUrl :: field is required but not found and has no default value",
    ),
    (
        "companyApplyUrl not a URL",
        element(companyApplyUrl="apply by email"),
        "element",
        400,
        "Invalid company apply url",
    ),
    (
        "no company",
        element(integrationContext=None),
        "element",
        400,
        "Either context or company or companyPageUrl or companyName must be provided",
    ),
    ("title missing", element(title=None), "element", 422, "ERROR :: /title :: field is required"),
    ("title over 200 characters", element(title="x" * 201), "element", 422, "ERROR :: /title ::"),
    (
        "description missing",
        element(description=None),
        "element",
        422,
        "ERROR :: /description :: field is required",
    ),
    ("location missing", element(location=None), "element", 422, "ERROR :: /location :: field is required"),
    ("listedAt missing", element(listedAt=None), "element", 422, "ERROR :: /listedAt :: field is required"),
    (
        "listedAt in the future",
        element(listedAt=NOW_MS + 3_600_000),
        "element",
        422,
        "should not be a future time",
    ),
    ("listedAt not a number", element(listedAt="2023-11-14"), "element", 422, "cannot be coerced to Long"),
    (
        "externalJobPostingId over 75 characters",
        element("x" * 76),
        "element",
        422,
        "ERROR :: /externalJobPostingId ::",
    ),
    (
        "externalJobPostingId a number",
        element(externalJobPostingId=17),
        "element",
        500,
        "Internal Server Error",
    ),
    (
        "more than seven alternate locations",
        element(
            alternateLocations=["Austin", "Dallas", "Houston", "Waco", "Plano", "Irving", "Frisco", "Katy"]
        ),
        "element",
        422,
        "The job contains more than seven locations. Please ensure maximum seven locations per job",
    ),
    (
        "two workplace types",
        element(workplaceTypes=["Hybrid", "Remote"]),
        "element",
        400,
        "The workplaceTypes field cannot have more than one value provided",
    ),
    (
        "an unknown workplace type",
        element(workplaceTypes=["Office"]),
        "element",
        422,
        "is not an enum symbol",
    ),
    (
        "an unknown operation",
        element(jobPostingOperationType="UPSERT"),
        "element",
        422,
        '"UPSERT" is not an enum symbol',
    ),
    (
        "an unknown employment status",
        element(employmentStatus="PERMANENT"),
        "element",
        422,
        "/employmentStatus ::",
    ),
    (
        "expireAt within 24 hours",
        element(expireAt=NOW_MS + 3_600_000),
        "element",
        400,
        "Invalid Expiration Date",
    ),
    (
        "a CLOSE of a job never created",
        element("never", "CLOSE"),
        "element",
        409,
        "Cannot close job which is already closed or does not exist",
    ),
]

# (case, job, whether Indeed takes it, the words of its error)
INDEED: list[tuple[str, dict[str, Any], bool, str]] = [
    ("a job Indeed takes", indeed_job(), True, ""),
    (
        "a fully remote job, its country alone",
        indeed_job(body__location={"country": "DE", "remoteType": "FULLY_REMOTE"}),
        True,
        "",
    ),
    ("HTML with RICH_FORMATTING", indeed_job(body__descriptionFormatting="RICH_FORMATTING"), True, ""),
    ("no salary", indeed_job(body__salary=None), True, ""),
    (
        "description missing",
        indeed_job(body__description=None),
        False,
        "Missing required field: body.description",
    ),
    (
        "description of spaces",
        indeed_job(body__description="   "),
        False,
        "Missing required field: body.description",
    ),
    ("title of spaces", indeed_job(body__title="  "), False, "Missing required field: body.title"),
    (
        "description empty",
        indeed_job(body__description=""),
        False,
        "Missing required field: body.description",
    ),
    (
        "description over 65,000 bytes (21,667 characters)",
        indeed_job(body__description="\u20ac" * 21_667),
        False,
        "String length exceeded: body.description is 65001 bytes",
    ),
    ("title missing", indeed_job(body__title=None), False, "Missing required field: body.title"),
    (
        "title over 75 characters",
        indeed_job(body__title="x" * 76),
        False,
        "String length exceeded: body.title",
    ),
    ("location missing", indeed_job(body__location=None), False, "Missing required field: body.location"),
    (
        "two locations in the one location",
        indeed_job(body__location=[{"country": "DE", "cityRegionPostal": "Berlin"}, {"country": "FR"}]),
        False,
        "Invalid value for body.location: a list",
    ),
    (
        "country missing",
        indeed_job(body__location__country=None),
        False,
        "Missing required field: body.location.country",
    ),
    ("country by name", indeed_job(body__location__country="Germany"), False, "Invalid country code"),
    ("country in lower case", indeed_job(body__location__country="de"), False, "Invalid country code"),
    ("country not ISO 3166", indeed_job(body__location__country="XX"), False, "Invalid country code"),
    (
        "cityRegionPostal missing, not fully remote",
        indeed_job(body__location__cityRegionPostal=None),
        False,
        'cityRegionPostal cannot be null when remote type is not "Fully Remote"',
    ),
    ("an unknown remote type", indeed_job(body__location__remoteType="SOMETIMES"), False, "remoteType"),
    ("benefits missing", indeed_job(body__benefits=None), False, "Missing required field: body.benefits"),
    (
        "an unknown formatting",
        indeed_job(body__descriptionFormatting="HTML"),
        False,
        "body.descriptionFormatting",
    ),
    ("url missing", indeed_job(metadata__url=None), False, "Missing required field: metadata.url"),
    ("url not a URL", indeed_job(metadata__url="careers page"), False, "Invalid URL: metadata.url"),
    ("datePublished missing", indeed_job(metadata__datePublished=None), False, "metadata.datePublished"),
    (
        "datePublished a date only",
        indeed_job(metadata__datePublished="2023-11-14"),
        False,
        "Invalid datetime",
    ),
    (
        "datePublished without offset",
        indeed_job(metadata__datePublished="2023-11-14T12:00"),
        False,
        "Invalid datetime",
    ),
    (
        "jobPostingId missing",
        indeed_job(metadata__jobPostingId=None),
        False,
        "Missing required field: metadata.jobPostingId",
    ),
    (
        "companyName missing",
        indeed_job(metadata__jobSource__companyName=None),
        False,
        "metadata.jobSource.companyName",
    ),
    (
        "sourceName missing",
        indeed_job(metadata__jobSource__sourceName=None),
        False,
        "metadata.jobSource.sourceName",
    ),
    (
        "sourceType unknown",
        indeed_job(metadata__jobSource__sourceType="ATS"),
        False,
        "metadata.jobSource.sourceType",
    ),
    (
        "employerIds missing",
        indeed_job(metadata__jobSource__employerIds=None),
        False,
        "metadata.jobSource.employerIds",
    ),
    (
        "an employer id without its type",
        indeed_job(metadata__jobSource__employerIds=[{"id": "1"}]),
        False,
        "employerIds",
    ),
    (
        "a placement not from a staffing agency",
        indeed_job(metadata__jobSource__isPlacement=True),
        False,
        "sourceType must be Staffing Agency",
    ),
    (
        "salary currency not ISO 4217",
        indeed_job(body__salary__currency="EURO"),
        False,
        "Invalid currency code",
    ),
    ("salary of 0", indeed_job(body__salary__minimumMinor=0), False, "body.salary.minimumMinor"),
    (
        "salary in units, not a whole number",
        indeed_job(body__salary__minimumMinor=90000.5),
        False,
        "minimumMinor",
    ),
    (
        "maximum under the minimum",
        indeed_job(body__salary__maximumMinor=100),
        False,
        "Maximum amount cannot be less than minimum amount",
    ),
    ("salary period unknown", indeed_job(body__salary__period="ANNUAL"), False, "body.salary.period"),
]


async def linkedin_verdict(s: Sandbox, job: dict[str, Any]) -> tuple[str | None, Any, str]:
    """Where LinkedIn refuses the job, with what status and words; (None, "SUCCEEDED", "")
    when it lists it."""
    (answer,) = await s.elements(job)
    if answer["status"] != 202:
        return "element", answer["status"], answer["error"]["message"]
    task = await s.task(answer["id"])
    if task["status"] == "SUCCEEDED":
        return None, "SUCCEEDED", ""
    return "task", task["status"], task.get("errorMessage", "")


@pytest.mark.parametrize(
    ("where", "status", "words", "job"), [(*c[2:], c[1]) for c in LINKEDIN], ids=[c[0] for c in LINKEDIN]
)
def test_linkedin_refuses_what_its_documents_refuse_where_it_says_so(where, status, words, job):
    async def body(s: Sandbox):
        return await linkedin_verdict(s, job)

    found_where, found_status, message = scenario(body)
    assert (found_where, found_status) == (where, status), message
    assert words in message


@pytest.mark.parametrize(
    ("takes", "words", "job"), [(c[2], c[3], c[1]) for c in INDEED], ids=[c[0] for c in INDEED]
)
def test_indeed_refuses_what_its_documents_refuse_as_bad_user_input_on_the_job(takes, words, job):
    async def body(s: Sandbox):
        return await s.upsert(job)

    answer = scenario(body)
    (result,) = answer["data"]["jobsIngest"]["createSourcedJobPostings"]["results"]
    if takes:
        assert "errors" not in answer and result["jobPosting"]["sourcedPostingId"]
        return
    assert result == {"jobPosting": None}
    assert all(
        e["path"] == ["jobsIngest", "createSourcedJobPostings", "results", 0] for e in answer["errors"]
    )
    assert {e["extensions"]["code"] for e in answer["errors"]} == {"BAD_USER_INPUT"}
    assert any(words in e["message"] for e in answer["errors"]), answer["errors"]


def test_the_table_has_refusals_enough_for_each_board():
    assert sum(c[2] is not None for c in LINKEDIN) >= 25 and sum(not c[2] for c in INDEED) >= 25
