"""What LinkedIn refuses in a job, and when: in the answer to the call (per element, HTTP 200
with the element's status), or later, when the job's task ends FAILED.

Sources (quoted below): the job posting schema (learn.microsoft.com/linkedin/talent/
job-postings/api/job-posting-api-schema, 02/2025 and `?view=li-lts-2026-03`), create-jobs
(its error table: "HTTP code / element status / message"), check-job-taskstatus (the task
errorMessages), the OpenAPI file job_posting_v2.yaml (linkedin-developers/
job-posting-development-tools) and LinkedIn's Java SDK for 202504 (linkedin/
talent-solutions-java-sdk). Where they disagree, the narrower reading is taken: a job the
sandbox takes is one every document lets through.
"""

from __future__ import annotations

import html
import re
import uuid
from dataclasses import dataclass
from typing import Any

from jobpost_dev.sandbox.linkedin import locations

TASK_URN = "urn:li:simpleJobPostingTask:"
OPERATIONS = ("CREATE", "UPDATE", "RENEW", "CLOSE")
# "Required: Yes" in the schema, in the order LinkedIn's 422s name them.
REQUIRED = ("jobPostingOperationType", "title", "description", "listedAt", "location", "companyApplyUrl")
STRINGS = ("title", "description", "location", "companyApplyUrl")
# "The maximum allowed length is 75 characters" (schema, li-lts-2026-03, and the SDK); the
# 02/2025 page said 200.
EXTERNAL_ID_MAX = 75
TITLE_MAX = 200  # "Character limit: 200"
# "Character limit: 100 ~ 25,000, limited set of HTML tags accepted, non-support HTML tags
# will be ignored" (schema; the OpenAPI file: minLength 100, maxLength 25000). Tags are not
# text: the minimum counts the text a member reads, the maximum every character sent.
DESCRIPTION_MIN, DESCRIPTION_MAX = 100, 25_000
MOST_ALTERNATE_LOCATIONS = 7  # "Maximum up to seven alternate locations"
# "On-site, Hybrid, Remote" (the schema; create-jobs' samples write them in lower case).
WORKPLACE_TYPES = ("on-site", "hybrid", "remote")
EMPLOYMENT_STATUSES = ("FULL_TIME", "PART_TIME", "CONTRACT", "INTERNSHIP", "TEMPORARY", "VOLUNTEER", "OTHER")
EXPERIENCE_LEVELS = (
    "ENTRY_LEVEL",
    "MID_SENIOR_LEVEL",
    "DIRECTOR",
    "EXECUTIVE",
    "INTERNSHIP",
    "ASSOCIATE",
    "NOT_APPLICABLE",
)
LISTING_TYPES = ("BASIC", "PREMIUM")
COMPANY_FIELDS = ("integrationContext", "company", "companyPageUrl", "companyName")
ORGANIZATION = re.compile(r"urn:li:organization:\d+")
URL = re.compile(r"https?://[^\s/?#]+\.[^\s/?#]+(?:[/?#]\S*)?")
DAY_MS = 86_400_000
# expireAt: "> current timestamp + 24 hours" (SDK) and "Value greater than 180 days is not
# allowed" (the OpenAPI file): the narrower of the documented ranges.
EXPIRE_AFTER_MS, EXPIRE_WITHIN_MS = DAY_MS, 180 * DAY_MS
TAG = re.compile(r"<[^>]*>")
TOO_SHORT = "The description length should be at least 100 characters"


@dataclass(frozen=True)
class Refusal:
    """An element's error in the call's answer: its status and LinkedIn's message."""

    status: int
    message: str
    code: str | None = None  # the SDK's `code`, where it names one


def required(name: str) -> Refusal:
    # create-jobs: "200/422 ERROR :: /{mandatory key} :: field is required but not found and
    # has no default value"
    return Refusal(422, f"ERROR :: /{name} :: field is required but not found and has no default value\n")


def not_enum(name: str, value: Any) -> Refusal:
    # create-jobs: 'ERROR :: /jobPostingOperationType :: "UPDATED" is not an enum symbol\n'
    return Refusal(422, f'ERROR :: /{name} :: "{value}" is not an enum symbol\n')


def element_refusal(element: Any, now_ms: int) -> Refusal | None:
    """What LinkedIn answers for this element in the call itself, or None: it starts a task."""
    if not isinstance(element, dict):
        return Refusal(422, f"ERROR :: / :: {element!r} cannot be coerced to a record\n")
    external_id = element.get("externalJobPostingId")
    if external_id in (None, ""):  # "Do not send an empty or null string for this field"
        return required("externalJobPostingId")
    if not isinstance(external_id, str):
        return Refusal(500, "Internal Server Error")  # create-jobs: "e.g. an integer externalJobPostingId"
    if len(external_id) > EXTERNAL_ID_MAX:
        return Refusal(
            422, f"ERROR :: /externalJobPostingId :: length {len(external_id)} is over {EXTERNAL_ID_MAX}\n"
        )
    return _fields(element) or _company(element) or _values(element, external_id, now_ms)


def _fields(element: dict[str, Any]) -> Refusal | None:
    for name in REQUIRED:
        value = element.get(name)
        if value is None or (name == "title" and isinstance(value, str) and not value.strip()):
            return required(name)
    listed = element["listedAt"]
    if not isinstance(listed, int) or isinstance(listed, bool):
        # create-jobs: "ERROR :: /{attribute_name} :: {value} cannot be coerced to Long\n"
        return Refusal(422, f"ERROR :: /listedAt :: {listed} cannot be coerced to Long\n")
    for name in STRINGS:
        if not isinstance(element[name], str):
            return Refusal(422, f"ERROR :: /{name} :: {element[name]} cannot be coerced to String\n")
    if element["jobPostingOperationType"] not in OPERATIONS:
        return not_enum("jobPostingOperationType", element["jobPostingOperationType"])
    for name, symbols in (
        ("listingType", LISTING_TYPES),
        ("employmentStatus", EMPLOYMENT_STATUSES),
        ("experienceLevel", EXPERIENCE_LEVELS),
    ):
        if name in element and element[name] not in symbols:
            return not_enum(name, element[name])
    return _workplace(element.get("workplaceTypes"))


def _workplace(types: Any) -> Refusal | None:
    if types is None:
        return None  # "absent means On-site"
    if not isinstance(types, list):
        return Refusal(422, f"ERROR :: /workplaceTypes :: {types} cannot be coerced to Array\n")
    if len(types) > 1:
        # create-jobs: "200/400 The workplaceTypes field cannot have more than one value provided.
        # Provided values [..]"
        return Refusal(
            400,
            f"The workplaceTypes field cannot have more than one value provided. Provided values {types}",
        )
    for value in types:
        if not isinstance(value, str) or value.lower() not in WORKPLACE_TYPES:
            return not_enum("workplaceTypes/0", value)
    return None


def _company(element: dict[str, Any]) -> Refusal | None:
    if not any(element.get(name) for name in COMPANY_FIELDS):
        # create-jobs: "400/400 Either context or company or companyPageUrl or companyName must be provided"
        return Refusal(400, "Either context or company or companyPageUrl or companyName must be provided")
    for name in ("integrationContext", "company"):  # "Must be in the format urn:li:organization:{company_id}"
        value = element.get(name)
        if value and not (isinstance(value, str) and ORGANIZATION.fullmatch(value)):
            return Refusal(422, f"ERROR :: /{name} :: {value} is not an organization URN\n")
    return None


def _values(element: dict[str, Any], external_id: str, now_ms: int) -> Refusal | None:
    if element["listedAt"] > now_ms:  # "should not be a future time"
        return Refusal(
            422,
            "ERROR :: /listedAt :: listedAt should not be a future time\n",
            "ERROR_INVALID_LISTED_AT_FIELD",
        )
    if len(element["title"]) > TITLE_MAX:
        return Refusal(422, f"ERROR :: /title :: length {len(element['title'])} is over {TITLE_MAX}\n")
    if not URL.fullmatch(element["companyApplyUrl"]):
        # create-jobs: "400/400 Invalid company apply url for job with externalPartnerId
        # {externalJobPostingId}, taskUrn urn:li:simpleJobPostingTask:{taskID}"
        return Refusal(
            400,
            f"Invalid company apply url for job with externalPartnerId {external_id}, "
            f"taskUrn {TASK_URN}{uuid.uuid4()}",
        )
    alternates = element.get("alternateLocations")
    if alternates is not None:
        if not (isinstance(alternates, list) and all(isinstance(a, str) for a in alternates)):
            return Refusal(422, f"ERROR :: /alternateLocations :: {alternates} cannot be coerced to Array\n")
        if len(alternates) > MOST_ALTERNATE_LOCATIONS:
            # create-jobs: "422/422 The job contains more than seven locations. Please ensure
            # maximum seven locations per job"
            return Refusal(
                422,
                "The job contains more than seven locations. Please ensure maximum seven locations per job",
            )
    return _expiry(element.get("expireAt"), now_ms)


def _expiry(expire_at: Any, now_ms: int) -> Refusal | None:
    if expire_at is None:
        return None  # "the default expiration is 180 days for basic ... jobs"
    valid = isinstance(expire_at, int) and not isinstance(expire_at, bool)
    if valid and now_ms + EXPIRE_AFTER_MS < expire_at <= now_ms + EXPIRE_WITHIN_MS:
        return None
    return Refusal(400, "Invalid Expiration Date", "ERROR_INVALID_EXPIRATION_DATE")  # the SDK's


def visible_length(description: str) -> int:
    """The characters a member reads: tags dropped ("non-support HTML tags will be ignored"),
    entities read as the character they stand for."""
    return len(html.unescape(TAG.sub("", description)).strip())


def task_failure(element: dict[str, Any], partner_urn: str) -> str | None:
    """Why LinkedIn drops this CREATE, UPDATE or RENEW when its task runs, in its words
    (check-job-taskstatus), or None."""
    if len(element["description"]) > DESCRIPTION_MAX:
        return (
            "This job post has an invalid job description. Please ensure a job description is present "
            "and between 100 - 25,000 characters."
        )
    invalid: list[str] = []
    if visible_length(element["description"]) < DESCRIPTION_MIN:
        # "Job {} was dropped: true Invalid Field: /description; Drop Message: The description
        # length should be at least 100 characters"
        invalid.append(f"Invalid Field: /description; Drop Message: {TOO_SHORT}")
    remote = [t.lower() for t in element.get("workplaceTypes") or []] == ["remote"]
    if not locations.in_format(element["location"], remote):
        # "Invalid Field: /city; \nInvalid Field: /postalCode; \nInvalid Field: /state;
        # \nInvalid Field: /geoLocation; "
        invalid.extend(f"Invalid Field: /{name}; " for name in ("city", "postalCode", "state", "geoLocation"))
    if not all(locations.alternate_in_format(a, remote) for a in element.get("alternateLocations") or []):
        invalid.append("Invalid Field: /alternateLocations; ")
    if not invalid:
        return None
    job = f"Job {{partner={partner_urn}, partnerJobCode={element['externalJobPostingId']}}}"
    return f"{job} was dropped: true\n\n" + "\n".join(invalid)


def client_side(details: str) -> str:
    """The wrapping of check-job-taskstatus's client-side errors."""
    return (
        "Job processing failed due to a client-side error. Please check payload and integration setup. "
        f"Error details: {details}"
    )


def duplicate_create(job_number: int, external_id: str) -> str:
    return client_side(
        "Trying to create a job with same partnerIdentifier already exists. It is duplicate creation "
        "request for a basic job or a non-draft premium job. Dropping the duplicate job posting creation "
        f"request. LinkedIn job id: {job_number}, externalJobPostingId: {external_id}"
    )


def not_existing(operation: str, partner_urn: str, external_id: str) -> str:
    return client_side(
        f"Operation type `{operation}` is not allowed for a non-existing job of partner urn {partner_urn}, "
        f"partner job code (`{external_id}`)"
    )


def not_open(operation: str, partner_urn: str, external_id: str) -> str:
    # The documents are silent on an UPDATE or RENEW of a job that is closed or expired: the
    # sandbox fails it, in the form of the non-existing job's message.
    return client_side(
        f"Operation type `{operation}` is not allowed for a closed job of partner urn {partner_urn}, "
        f"partner job code (`{external_id}`)"
    )


# check-job-taskstatus: "This job was dropped because of an unexpected error that occurred
# during job ingestion. This is meant to be a catch-all error." (the task_fail_probability's)
CATCH_ALL = (
    "This job was dropped because of an unexpected error that occurred during job ingestion. "
    "This is meant to be a catch-all error."
)
# create-jobs: "409/409 Cannot close job which is already closed or does not exist"
CANNOT_CLOSE = "Cannot close job which is already closed or does not exist"
