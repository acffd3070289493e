"""What Indeed refuses in a job of `createSourcedJobPostings`, each refusal a BAD_USER_INPUT
error of its own (docs-plus.indeed.com/job-sync-api/troubleshoot-errors: "Most errors return
HTTP 200 with error details in the response body"; its headings: missing required fields,
invalid datetime, invalid country code, invalid currency code, string length exceeded,
"Maximum amount cannot be less than minimum amount").

The input objects (docs-plus.indeed.com/api/job/objects/CreateSourcedJobPostingInput,
SourcedJobPostingBodyInput, SourcedJobPostingSalaryInput, SourcedJobPostingJobSourceInput,
SourcedJobPostingMetadataInput):
- `body.title` String!; Job Sync states no length, Indeed's Job Update API caps it at 75
  characters (UpdateSourcedJobPostingInput): the conservative choice, taken here;
- `body.description` String!, "Maximum 65,000 bytes (1 byte for ASCII, 2-3 bytes for other
  characters)"; `body.descriptionFormatting` TEXT (the default) or RICH_FORMATTING;
- `body.location` {`country` (ISO 3166-1 alpha-2, "US", "JP"), `cityRegionPostal`}:
  "cityRegionPostal cannot be null when remote type is not "Fully Remote"" (a heading of
  troubleshoot-errors). The remote type's field is not in the visible schema: the sandbox
  reads `body.location.remoteType`, whose one value it knows is `FULLY_REMOTE`;
- `body.benefits` [String!]! ("Use an empty list if no non-salary benefits");
- `body.salary` {`currency` ISO 4217, `minimumMinor` Int64!, `maximumMinor`, `period`
  String! of DAY, HOUR, MILE, MONTH, WEEK, YEAR, TASK, SHIFT}: "Don't pass 0 in pay fields";
- `metadata.jobPostingId` String!, `metadata.url` (the job's page: "Must match the details
  at … url"), `metadata.datePublished` a date-time (example "2023-01-02T12:00Z"); both
  required here, as the research's conservative choice;
- `metadata.jobSource` {`companyName` String!, `sourceName` String!, `sourceType` String!
  of Employer, Job Board, Staffing Agency, `employerIds` [{type, id}]}; "if [isPlacement
  is] true, sourceType must be Staffing Agency".
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from jobpost_dev.sandbox import iso

TITLE_MAX_CHARS = 75
DESCRIPTION_MAX_BYTES = 65_000
FORMATTINGS = ("TEXT", "RICH_FORMATTING")
REMOTE_TYPES = ("FULLY_REMOTE",)
SOURCE_TYPES = ("Employer", "Job Board", "Staffing Agency")
PERIODS = ("DAY", "HOUR", "MILE", "MONTH", "WEEK", "YEAR", "TASK", "SHIFT")
URL = re.compile(r"https?://[^\s/?#]+\.[^\s/?#]+(?:[/?#]\S*)?")
INT64_MAX = 2**63 - 1


def problems(job: Any) -> list[str]:
    """Every reason Indeed refuses this job, one message each (empty: it takes it)."""
    body, metadata = _record(job, "body"), _record(job, "metadata")
    return [
        *_missing(body, metadata),
        *_body(body),
        *_location(body.get("location")),
        *_salary(body.get("salary")),
        *_metadata(metadata),
        *_source(_record(metadata, "jobSource")),
    ]


def _missing(body: dict[str, Any], metadata: dict[str, Any]) -> list[str]:
    source = _record(metadata, "jobSource")
    wanted = [
        ("body.title", body.get("title")),
        ("body.description", body.get("description")),
        ("body.location", body.get("location")),
        ("metadata.jobPostingId", metadata.get("jobPostingId")),
        ("metadata.datePublished", metadata.get("datePublished")),
        ("metadata.url", metadata.get("url")),
        ("metadata.jobSource", metadata.get("jobSource")),
        ("metadata.jobSource.companyName", source.get("companyName")),
        ("metadata.jobSource.sourceName", source.get("sourceName")),
        ("metadata.jobSource.sourceType", source.get("sourceType")),
        ("metadata.jobSource.employerIds", source.get("employerIds")),
    ]
    location = body.get("location")
    if isinstance(location, dict):
        wanted.insert(3, ("body.location.country", location.get("country")))
    missing = [f"Missing required field: {where}" for where, value in wanted if _blank(value)]
    if not isinstance(body.get("benefits"), list):
        missing.append("Missing required field: body.benefits (a list: empty when there are none)")
    return missing


def _body(body: dict[str, Any]) -> list[str]:
    found = []
    title, description = body.get("title"), body.get("description")
    for name, value in (("title", title), ("description", description)):
        if value is not None and not isinstance(value, str):
            found.append(f"Invalid value for body.{name}: {value!r} (a string)")
    if isinstance(title, str) and len(title) > TITLE_MAX_CHARS:
        found.append(
            f"String length exceeded: body.title is {len(title)} characters, at most {TITLE_MAX_CHARS}"
        )
    if isinstance(description, str) and len(description.encode("utf-8")) > DESCRIPTION_MAX_BYTES:
        size = len(description.encode("utf-8"))
        found.append(
            f"String length exceeded: body.description is {size} bytes, at most {DESCRIPTION_MAX_BYTES}"
        )
    formatting = body.get("descriptionFormatting", "TEXT")
    if formatting not in FORMATTINGS:
        found.append(
            f"Invalid value for body.descriptionFormatting: {formatting!r} (TEXT or RICH_FORMATTING)"
        )
    benefits = body.get("benefits")
    if isinstance(benefits, list) and not all(isinstance(b, str) and b for b in benefits):
        found.append("Invalid value for body.benefits: every benefit is a non-empty string")
    return found


def _location(location: Any) -> list[str]:
    if _blank(location):
        return []  # missing, said once
    if not isinstance(location, dict):
        # SourcedJobPostingBodyInput's `location` is one input object: a job is at one place, and
        # a list (or any other value) where an input object goes fails GraphQL's input coercion.
        kind = type(location).__name__
        return [f"Invalid value for body.location: a {kind}, not one object {{country, cityRegionPostal}}"]
    found = []
    country = location.get("country")
    if isinstance(country, str) and country and not iso.is_alpha_2(country):
        found.append(f"Invalid country code: {country!r} (ISO 3166-1 alpha-2, e.g. US)")
    remote_type = location.get("remoteType")
    if remote_type is not None and remote_type not in REMOTE_TYPES:
        found.append(f"Invalid value for body.location.remoteType: {remote_type!r}")
    if remote_type not in REMOTE_TYPES and _blank(location.get("cityRegionPostal")):
        found.append('cityRegionPostal cannot be null when remote type is not "Fully Remote"')
    return found


def _salary(salary: Any) -> list[str]:
    if salary is None:
        return []
    if not isinstance(salary, dict):
        return ["Invalid value for body.salary: an object {currency, minimumMinor, maximumMinor, period}"]
    found = []
    currency, minimum, maximum, period = (
        salary.get(k) for k in ("currency", "minimumMinor", "maximumMinor", "period")
    )
    if currency is None or minimum is None or period is None:
        found.append("Missing required field: body.salary.currency, minimumMinor and period")
    if currency is not None and not (isinstance(currency, str) and iso.is_currency(currency)):
        found.append(f"Invalid currency code: {currency!r} (ISO 4217, e.g. USD)")
    if period is not None and period not in PERIODS:
        found.append(f"Invalid value for body.salary.period: {period!r} (one of {', '.join(PERIODS)})")
    for name, amount in (("minimumMinor", minimum), ("maximumMinor", maximum)):
        if amount is not None and not (_int64(amount) and int(str(amount)) > 0):
            found.append(
                f"Invalid amount for body.salary.{name}: {amount!r} (a whole number of minor units over 0)"
            )
    if _int64(minimum) and _int64(maximum) and int(str(maximum)) < int(str(minimum)):
        found.append("Maximum amount cannot be less than minimum amount")
    return found


def _metadata(metadata: dict[str, Any]) -> list[str]:
    found = []
    published, url = metadata.get("datePublished"), metadata.get("url")
    if published not in (None, "") and not _date_time(published):
        found.append(f"Invalid datetime: metadata.datePublished {published!r} (ISO 8601 with its offset)")
    if url not in (None, "") and not (isinstance(url, str) and URL.fullmatch(url)):
        found.append(f"Invalid URL: metadata.url {url!r}")
    job_id = metadata.get("jobPostingId")
    if job_id not in (None, "") and not isinstance(job_id, str):
        found.append(f"Invalid value for metadata.jobPostingId: {job_id!r} (a string)")
    return found


def _source(source: dict[str, Any]) -> list[str]:
    found = []
    source_type = source.get("sourceType")
    if source_type not in (None, "") and source_type not in SOURCE_TYPES:
        found.append(
            f"Invalid value for metadata.jobSource.sourceType: {source_type!r} ({', '.join(SOURCE_TYPES)})"
        )
    if source.get("isPlacement") is True and source_type != "Staffing Agency":
        found.append("metadata.jobSource.isPlacement: a placement's sourceType must be Staffing Agency")
    employers = source.get("employerIds")
    if employers not in (None, []) and not (
        isinstance(employers, list) and all(_employer(e) for e in employers)
    ):
        found.append("Invalid value for metadata.jobSource.employerIds: each one {type, id}, both non-empty")
    return found


def _blank(value: Any) -> bool:
    """Missing, as a required field: absent, null, empty, or text of spaces only."""
    return value is None or value == [] or (isinstance(value, str) and not value.strip())


def _date_time(value: Any) -> bool:
    if not isinstance(value, str) or "T" not in value:
        return False
    try:
        return datetime.fromisoformat(value).tzinfo is not None
    except ValueError:
        return False


def _int64(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):  # GraphQL's Int64 is often written as a string
        value = int(value) if re.fullmatch(r"-?\d+", value) else None
    return isinstance(value, int) and -INT64_MAX - 1 <= value <= INT64_MAX


def _employer(found: Any) -> bool:
    return isinstance(found, dict) and all(isinstance(found.get(k), str) and found[k] for k in ("type", "id"))


def _record(parent: Any, name: str) -> dict[str, Any]:
    value = parent.get(name) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else {}
