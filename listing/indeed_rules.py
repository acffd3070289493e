"""What Indeed refuses in a job, from its documents (docs-plus.indeed.com/api/job/objects/
SourcedJobPostingBodyInput, …SalaryInput, …JobSourceInput; docs.indeed.com/job-sync-api/faq
and troubleshoot-errors): a description ("String!", at most 65,000 bytes), a job title (75
characters, the cap of Indeed's Job Update API; Job Sync states none, so the conservative
one), one location (`body.location`: a country, and `cityRegionPostal` unless the job is
fully remote), the job's page (`metadata.url`), pay that is not 0 in minor units ("Don't
pass 0 in pay fields"), and the employer's identity (`employerIds`, `sourceName`)."""

from __future__ import annotations

from listing import iso
from listing.employers import EmployerRegistry
from listing.problems import Code, Problem
from schemas.enums import Destination, Workplace
from schemas.model import Posting

BOARD = Destination.INDEED
DESCRIPTION_MAX_BYTES = 65_000
TITLE_MAX_CHARS = 75


def problems(posting: Posting, employer: str, registry: EmployerRegistry) -> list[Problem]:
    return [
        *_title(posting),
        *_description(posting),
        *_apply_url(posting),
        *_location(posting),
        *_salary(posting),
        *employer_problems(employer, registry),
    ]


def _title(posting: Posting) -> list[Problem]:
    if len(posting.title) <= TITLE_MAX_CHARS:
        return []
    return [
        _problem(
            "/title",
            Code.TOO_LONG,
            f"Indeed takes a job title of at most {TITLE_MAX_CHARS} characters; this one has "
            f"{len(posting.title)}. Give the job's title only, without its location or employment type.",
        )
    ]


def _description(posting: Posting) -> list[Problem]:
    if not posting.description.strip():
        return [_problem("/description", Code.REQUIRED, "Indeed lists a job only with a description.")]
    size = len(posting.description.encode("utf-8"))
    if size <= DESCRIPTION_MAX_BYTES:
        return []
    return [
        _problem(
            "/description",
            Code.TOO_LONG,
            f"Indeed takes a description of at most {DESCRIPTION_MAX_BYTES:,} bytes in UTF-8 (1 byte for "
            f"an ASCII character, 2 to 4 for others); this one has {size:,}.",
        )
    ]


def _apply_url(posting: Posting) -> list[Problem]:
    if posting.apply_url:
        return []
    return [
        _problem(
            "/apply_url",
            Code.REQUIRED,
            "Indeed requires the URL of the job's own page (its metadata.url), whose content matches "
            "the description.",
        )
    ]


def _location(posting: Posting) -> list[Problem]:
    if len(posting.locations) > 1:
        return [
            _problem(
                "/locations",
                Code.TOO_MANY,
                f"Indeed lists a job at one location; this posting has {len(posting.locations)}. Write "
                "one posting per location for Indeed, or leave indeed out of this posting's boards.",
            )
        ]
    if posting.workplace == Workplace.REMOTE or not posting.locations:
        return []
    place = posting.locations[0]
    if place.city or place.postal_code:
        return []
    return [
        _problem(
            "/locations/0/city",
            Code.REQUIRED,
            "Indeed needs the city or the postal code of a job that is not fully remote (its "
            'cityRegionPostal); a country alone is a location only for a job whose workplace is "remote".',
        )
    ]


def _salary(posting: Posting) -> list[Problem]:
    salary = posting.salary
    if salary is None:
        return []
    decimals = iso.minor_units(salary.currency)
    if round(salary.min * 10**decimals) >= 1:
        return []
    return [
        _problem(
            "/salary/min",
            Code.MUST_BE_POSITIVE,
            f"Indeed takes pay in the currency's smallest unit and refuses 0 there; a minimum of "
            f"{salary.min:g} {salary.currency} is 0 in that unit. Give a minimum of at least "
            f"{10**-decimals:g} {salary.currency}, or no salary.",
        )
    ]


def employer_problems(employer: str, registry: EmployerRegistry) -> list[Problem]:
    if registry.identity(employer, BOARD) is not None:
        return []
    return [
        _problem(
            "",
            Code.EMPLOYER_NOT_CONFIGURED,
            f"Indeed lists a job under the employer that posts it, and no Indeed employer is "
            f"configured for the employer {employer!r}: leave indeed out of the posting's boards, or "
            "ask the service's operator to add the employer's Indeed identity.",
        )
    ]


def _problem(pointer: str, code: Code, detail: str) -> Problem:
    return Problem(BOARD, pointer, code, detail)
