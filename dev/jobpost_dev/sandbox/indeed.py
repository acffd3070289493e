"""Indeed's Job Sync API as the sandbox imitates it (the HTTP route is in
`jobpost_dev.sandbox.app`): GraphQL over `POST /graphql`.

`jobsIngest { createSourcedJobPostings(input: {jobPostings: [{body, metadata}]}) }` creates
or upserts by `metadata.jobPostingId` + `metadata.jobSource.sourceName`, answering per job
`results[i].jobPosting.sourcedPostingId`, an id Indeed makes and the only one
`expireSourcedJobsBySourcedPostingId(input: {jobs: [{sourcedPostingId}]})` takes
(docs.indeed.com/api/job/mutations/jobsIngest/createSourcedJobPostings: "Make sure you always
save the sourcedPostingId value. You need this value to either expire jobs"). A job needs
`body.title`, `body.description` (at most 65,000 bytes), `body.location` (`country`, a
two-letter code, and `cityRegionPostal`), `body.benefits` (a list, maybe empty), and
`metadata.jobPostingId`, `datePublished` (ISO 8601), `url`, `jobSource` {`companyName`,
`sourceName`, `sourceType` Employer | Job Board | Staffing Agency, `employerIds` [{type,
id}]} (docs-plus.indeed.com/api/job/objects/CreateSourcedJobPostingInput, …JobSourceInput).

Errors come as HTTP 200 with `errors[]` and `extensions.code` (BAD_USER_INPUT for invalid
input), a refused job's result being `jobPosting: null` with an error whose `path` ends at
its index (docs-plus.indeed.com/job-sync-api/troubleshoot-errors: "HTTP status codes - Only
for rate limiting (HTTP 429) and network-level failures"). Two jobs with one id in one call
are refused ("The request contains duplicate job entries").
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fastapi.responses import JSONResponse

from jobpost_dev.sandbox.state import BadKeys, BoardState, SandboxPosting, Submission
from schemas.model import Destination

UPSERT = "createSourcedJobPostings"
EXPIRE = "expireSourcedJobsBySourcedPostingId"
SOURCE_TYPES = ("Employer", "Job Board", "Staffing Agency")
COUNTRY = re.compile(r"[A-Z]{2}")
URL = re.compile(r"https?://[^\s/]+\S*")
DESCRIPTION_MAX_BYTES = 65_000


def refusal(job: Any) -> str | None:
    """Why Indeed would refuse this job (its BAD_USER_INPUT message), or None."""
    body = _record(job, "body")
    metadata = _record(job, "metadata")
    source = _record(metadata, "jobSource")
    location = _record(body, "location")
    for where, record, name in (
        ("body", body, "title"),
        ("body", body, "description"),
        ("body.location", location, "country"),
        ("body.location", location, "cityRegionPostal"),
        ("metadata", metadata, "jobPostingId"),
        ("metadata", metadata, "datePublished"),
        ("metadata", metadata, "url"),
        ("metadata.jobSource", source, "companyName"),
        ("metadata.jobSource", source, "sourceName"),
        ("metadata.jobSource", source, "sourceType"),
    ):
        if not isinstance(record.get(name), str) or not record[name]:
            return f"Missing required field: {where}.{name}"
    if not isinstance(body.get("benefits"), list):
        return "Missing required field: body.benefits (a list; empty when there are none)"
    if len(body["description"].encode()) > DESCRIPTION_MAX_BYTES:
        return f"String length exceeded: body.description is over {DESCRIPTION_MAX_BYTES} bytes"
    if not COUNTRY.fullmatch(location["country"]):
        return f"Invalid country code: {location['country']!r}"
    if source["sourceType"] not in SOURCE_TYPES:
        return f"Invalid sourceType {source['sourceType']!r}: one of {', '.join(SOURCE_TYPES)}"
    employers = source.get("employerIds")
    if not (isinstance(employers, list) and employers and all(_employer(e) for e in employers)):
        return "metadata.jobSource.employerIds: the employer's [{type, id}] is required"
    try:
        datetime.fromisoformat(metadata["datePublished"])
    except ValueError:
        return f"Invalid datetime: metadata.datePublished {metadata['datePublished']!r}"
    if not URL.fullmatch(metadata["url"]):
        return f"Invalid URL: metadata.url {metadata['url']!r}"
    return None


@dataclass
class IndeedBoard(BoardState):
    name: str = Destination.INDEED.value
    answered: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (mutation, key)
    sourced: dict[tuple[str, str], str] = field(default_factory=dict)  # (sourceName, jobPostingId) → id
    owners: dict[str, str] = field(default_factory=dict)  # sourcedPostingId → posting id

    def reset(self) -> None:
        super().reset()
        self.answered, self.sourced, self.owners = {}, {}, {}

    def mutate(
        self, mutation: str, items: list[Any], keys: list[tuple[str, int]], now_ms: int
    ) -> dict[str, Any]:
        """The GraphQL answer to one call: a result per item, an error per refused item."""
        owners = [self._owner(mutation, item) for item in items]
        for (posting_id, _), owner in zip(keys, owners, strict=True):
            if owner is not None and owner != posting_id:
                raise BadKeys(f"Idempotency-Key {posting_id!r} is not the job's ({owner!r})")
        repeated = {o for o in owners if o is not None and owners.count(o) > 1}
        results, errors = [], []
        for index, (item, (posting_id, version)) in enumerate(zip(items, keys, strict=True)):
            result, error = self._one(mutation, item, posting_id, version, posting_id in repeated, now_ms)
            results.append(result)
            if error is not None:
                code, message = error
                errors.append(element_error(code, message, ["jobsIngest", mutation, "results", index]))
        answer: dict[str, Any] = {"data": {"jobsIngest": {mutation: {"results": results}}}}
        if errors:
            answer["errors"] = errors
        return answer

    def _owner(self, mutation: str, item: Any) -> str | None:
        """The posting an item is about: the job id of an upsert, the owner of an expire's id."""
        if mutation == UPSERT:
            job_id = _record(item, "metadata").get("jobPostingId")
            return job_id if isinstance(job_id, str) else None
        return self.owners.get(str(_record_value(item, "sourcedPostingId")))

    def _one(
        self, mutation: str, item: Any, posting_id: str, version: int, repeated: bool, now_ms: int
    ) -> tuple[dict[str, Any], tuple[str, str] | None]:
        posting = self.posting(posting_id)
        empty = {"jobPosting": None} if mutation == UPSERT else {"trackingKey": None}
        if repeated:
            return empty, ("BAD_USER_INPUT", "The request contains duplicate job entries")
        key = (mutation, f"{posting_id}:{version}")
        if key in self.answered:
            posting.duplicates += 1
            return self.answered[key], None
        fault = self.faults.element_fault(posting_id)
        if fault == "reject":
            return empty, ("BAD_USER_INPUT", "sandbox: rejected")
        if fault == "error":
            return empty, ("INTERNAL_SERVER_ERROR", "sandbox: unavailable")
        if mutation == UPSERT:
            why = refusal(item)
            if why is not None:
                return empty, ("BAD_USER_INPUT", why)
            result: dict[str, Any] = {"jobPosting": {"sourcedPostingId": self._sourced_id(item, posting_id)}}
        else:
            sourced_id = _record_value(item, "sourcedPostingId")
            if not isinstance(sourced_id, str) or sourced_id not in self.owners:
                return empty, ("BAD_USER_INPUT", f"No job has sourcedPostingId {sourced_id!r}")
            result = {"trackingKey": str(uuid.uuid4())}
        self.answered[key] = result
        _applied(posting, version, mutation, now_ms)
        return result, None

    def _sourced_id(self, job: dict[str, Any], posting_id: str) -> str:
        metadata = job["metadata"]
        known = (metadata["jobSource"]["sourceName"], metadata["jobPostingId"])
        if known not in self.sourced:
            self.sourced[known] = str(uuid.uuid4())
            self.owners[self.sourced[known]] = posting_id
        return self.sourced[known]


def _applied(posting: SandboxPosting, version: int, mutation: str, now_ms: int) -> None:
    operation = "EXPIRE" if mutation == EXPIRE else "UPSERT"
    posting.apply(version, now_ms, closes=mutation == EXPIRE)
    posting.log.append(Submission(version, operation, now_ms, ended_at_ms=now_ms, state="APPLIED"))


def element_error(code: str, message: str, path: list[Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {
        "message": message,
        "extensions": {"code": code, "classification": "ValidationError"},
    }
    if path is not None:
        error["path"] = path
    return error


def whole_call(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Indeed's answer to a call refused as a whole: GraphQL errors, no data."""
    return JSONResponse({"data": None, "errors": [element_error(code, message)]}, status, headers)


def unauthorized() -> JSONResponse:
    # Indeed's message for a missing, invalid or expired token ("Client is not authorized",
    # troubleshoot-errors); answered 401 here as CONTRACT.md says of both boards.
    return whole_call(401, "UNAUTHENTICATED", "Client is not authorized")


def _record(parent: Any, name: str) -> dict[str, Any]:
    value = parent.get(name) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else {}


def _record_value(parent: Any, name: str) -> Any:
    return parent.get(name) if isinstance(parent, dict) else None


def _employer(found: Any) -> bool:
    return isinstance(found, dict) and all(isinstance(found.get(k), str) and found[k] for k in ("type", "id"))
