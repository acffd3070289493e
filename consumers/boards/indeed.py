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

Choices the documentation leaves open:
- A DELETED version expires the job, which needs its `sourcedPostingId`. Rather than keep
  Indeed's ids in the delivery state, the close upserts the version's snapshot (the posting's
  last content, a no-op for a live job) in the call that carries the batch's other jobs, and
  expires the ids that answer gives in a second call: one call per batch, two when it closes
  something. Should the upsert be refused, the close is refused with it, saying so.
- Jobs per call: Indeed's create limits fall with the batch (1 job: 4,000 calls a minute;
  2 to 10: 800; more than 10: 40, per its Job Sync rate-limit table), so 10 a call — 8,000 jobs
  a minute — is the default; its FAQ allows up to 100.
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
    idempotency_keys,
    prepare,
    refused,
    settled,
    whole_call,
)
from consumers.boards.base import (
    BoardDown,
    CallFailed,
    Delivered,
    ElementOutcome,
    Rejected,
    TaskOutcome,
    Throttled,
    TokenRefused,
    Unsure,
)
from consumers.boards.settings import BoardSettings
from listing import indeed_rules
from listing.employers import Employer, EmployerRegistry
from schemas.model import Destination, Op, PostingUpdate

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

    def __init__(
        self,
        client: aiohttp.ClientSession,
        settings: IndeedSettings,
        employers: EmployerRegistry | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.max_batch = settings.max_batch
        self.employers = employers or EmployerRegistry.load(settings.employers_file)

    async def send(self, updates: Sequence[PostingUpdate], token: str) -> list[ElementOutcome]:
        outcomes, jobs = prepare(updates, self._job)
        if not jobs:
            return settled(outcomes)
        sent = [updates[i] for i, _ in jobs]
        answer = await self._mutate(UPSERT, {"jobPostings": [job for _, job in jobs]}, sent, token)
        expiring: list[tuple[int, str]] = []
        for (index, _), (outcome, sourced_id) in zip(
            jobs, _results(answer, len(jobs), UPSERT_FIELD), strict=True
        ):
            if updates[index].op != Op.DELETED or sourced_id is None:
                outcomes[index] = _closing(outcome) if updates[index].op == Op.DELETED else outcome
            else:
                expiring.append((index, sourced_id))
        if expiring:
            expired = await self._expire(expiring, updates, token)
            for (index, _), outcome in zip(expiring, expired, strict=True):
                outcomes[index] = outcome
        return settled(outcomes)

    async def confirm(self, task_ids: Sequence[str], token: str) -> dict[str, TaskOutcome]:
        return {}  # Indeed answers synchronously: nothing is ever submitted

    async def _expire(
        self, expiring: list[tuple[int, str]], updates: Sequence[PostingUpdate], token: str
    ) -> list[ElementOutcome]:
        """The second call of a batch that closes: a failure of it as a whole leaves the
        first call's outcomes standing and makes each close unknown (retried)."""
        closing = [updates[i] for i, _ in expiring]
        jobs = {"jobs": [{"sourcedPostingId": sourced_id} for _, sourced_id in expiring]}
        try:
            answer = await self._mutate(EXPIRE, jobs, closing, token)
            return [outcome for outcome, _ in _results(answer, len(closing), EXPIRE_FIELD)]
        except Throttled as exc:
            return [Unsure(f"the expire call: {exc}", exc.retry_after_s) for _ in closing]
        except (BoardDown, CallFailed, TokenRefused) as exc:
            return [Unsure(f"the expire call: {exc}") for _ in closing]

    async def _mutate(
        self, query: str, given: dict[str, Any], updates: Sequence[PostingUpdate], token: str
    ) -> Answer:
        return await call(
            self.client,
            self.destination,
            "POST",
            f"{self.settings.base_url}/graphql",
            headers={
                "Authorization": f"Bearer {token}",
                "Idempotency-Key": idempotency_keys(updates),
            },
            timeout_s=self.settings.timeout_s,
            json_body={"query": query, "variables": {"input": given}},
        )

    def _job(self, update: PostingUpdate) -> Element | Rejected:
        employer = self.employers.get(update.employer)
        if employer is None or employer.indeed is None:
            (problem,) = indeed_rules.employer_problems(update.employer, self.employers)
            return Rejected(problem.detail)
        identity, posting = employer.indeed, update.posting
        published = datetime.fromtimestamp(update.last_update_time_millis / 1000, UTC)
        body = {
            "title": posting.title,
            "description": posting.description,
            "location": _location(update, employer),
            "benefits": [],
        }
        source = {
            "companyName": employer.company_name,
            "sourceName": identity.source_name,
            "sourceType": identity.source_type,
            "employerIds": [{"type": identity.employer_id_type, "id": identity.employer_id}],
        }
        metadata = {
            "jobSource": source,
            "jobPostingId": update.posting_id,
            "datePublished": published.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "url": posting.apply_url or employer.apply_url,
        }
        return {"body": body, "metadata": _present(metadata)}


def _location(update: PostingUpdate, employer: Employer) -> dict[str, Any]:
    """The posting's first location (`country`, `cityRegionPostal`), or for a record from
    before `locations` its free text and the employer's country."""
    posting = update.posting
    if not posting.locations:
        country = employer.indeed.country if employer.indeed else None
        return {"country": country, "cityRegionPostal": posting.location or employer.location}
    place = posting.locations[0]
    city_region = ", ".join(part for part in (place.city, place.region) if part)
    city_region_postal = " ".join(part for part in (city_region, place.postal_code) if part)
    return {"country": place.country, "cityRegionPostal": city_region_postal or None}


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
        return (Rejected(detail) if _codes(errors) & REFUSING else Unsure(detail)), None
    if field == UPSERT_FIELD:
        sourced_id = _dig(result, "jobPosting", "sourcedPostingId")
        if isinstance(sourced_id, str) and sourced_id:
            return Delivered(), sourced_id
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


def _closing(outcome: ElementOutcome) -> ElementOutcome:
    """A close whose upsert (to learn the job's sourcedPostingId) did not go through."""
    why = "to expire the job Indeed must name its sourcedPostingId, and its upsert"
    if isinstance(outcome, Rejected):
        return Rejected(f"{why} was refused: {outcome.reason}")
    if isinstance(outcome, Unsure):
        return Unsure(f"{why} failed: {outcome.reason}", outcome.retry_after_s)
    return Unsure(f"{why} gave no id")


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
