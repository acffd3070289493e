"""What LinkedIn refuses in a job, from its documents (learn.microsoft.com/linkedin/talent/
job-postings/api/job-posting-api-schema and create-jobs; the OpenAPI file job_posting_v2.yaml):
a description of 100 to 25,000 characters ("Character limit: 100 ~ 25,000"), a
`companyApplyUrl`, at most one location and seven `alternateLocations`, locations in its
formats ("CITY, STATE", "CITY, COUNTRY", "POSTALCODE, COUNTRYCODE"; "COUNTRY" for remote jobs
only), and the company page the job is posted for (`integrationContext`).

LinkedIn checks most of these only after it accepted the call, failing the job's task ("The
description length should be at least 100 characters", "Invalid Field: /city"): checked
here when the posting is written, the employer hears it at once and nothing is sent."""

from __future__ import annotations

from listing import description
from listing.employers import EmployerRegistry
from listing.problems import Code, Problem
from schemas.enums import Destination, Workplace
from schemas.model import Posting

BOARD = Destination.LINKEDIN
DESCRIPTION_MIN_CHARS = 100
DESCRIPTION_MAX_CHARS = 25_000
MOST_LOCATIONS = 8  # the job's location and at most seven alternateLocations


def problems(posting: Posting, employer: str, registry: EmployerRegistry) -> list[Problem]:
    return [
        *_description(posting),
        *_apply_url(posting),
        *_locations(posting),
        *employer_problems(employer, registry),
    ]


def _description(posting: Posting) -> list[Problem]:
    seen = len(description.visible(posting.description, posting.description_format).strip())
    if seen < DESCRIPTION_MIN_CHARS:
        return [
            _problem(
                "/description",
                Code.TOO_SHORT,
                f"LinkedIn lists a job only with a description of at least {DESCRIPTION_MIN_CHARS} "
                f"characters of visible text (tags not counted); this one has {seen}.",
            )
        ]
    sent = len(posting.description)
    if sent > DESCRIPTION_MAX_CHARS:
        return [
            _problem(
                "/description",
                Code.TOO_LONG,
                f"LinkedIn takes a description of at most {DESCRIPTION_MAX_CHARS:,} characters as sent "
                f"(HTML tags and entities counted); this one has {sent:,}.",
            )
        ]
    return []


def _apply_url(posting: Posting) -> list[Problem]:
    if posting.apply_url:
        return []
    return [
        _problem(
            "/apply_url",
            Code.REQUIRED,
            "LinkedIn requires the URL where candidates apply for the job (its companyApplyUrl).",
        )
    ]


def _locations(posting: Posting) -> list[Problem]:
    if len(posting.locations) > MOST_LOCATIONS:
        return [
            _problem(
                "/locations",
                Code.TOO_MANY,
                f"LinkedIn lists a job at {MOST_LOCATIONS} locations at most (its location and seven "
                f"alternate locations); this posting has {len(posting.locations)}.",
            )
        ]
    if posting.workplace == Workplace.REMOTE:
        return []  # a country alone is a remote job's location, and every location has one
    return [
        _problem(
            f"/locations/{index}/city",
            Code.LOCATION_FORMAT,
            "LinkedIn needs an on-site or hybrid job's location as a city (with its region or country) "
            "or as a postal code with its country; this location has neither a city nor a postal code. "
            'A country alone is a location only for a job whose workplace is "remote".',
        )
        for index, place in enumerate(posting.locations)
        if not (place.city or place.postal_code)
    ]


def employer_problems(employer: str, registry: EmployerRegistry) -> list[Problem]:
    if registry.identity(employer, BOARD) is not None:
        return []
    return [
        _problem(
            "",
            Code.EMPLOYER_NOT_CONFIGURED,
            f"LinkedIn lists a job on the page of the company that posts it, and no LinkedIn company "
            f"page is configured for the employer {employer!r}: leave linkedin out of the posting's "
            "boards, or ask the service's operator to add the employer's LinkedIn organization.",
        )
    ]


def _problem(pointer: str, code: Code, detail: str) -> Problem:
    return Problem(BOARD, pointer, code, detail)
