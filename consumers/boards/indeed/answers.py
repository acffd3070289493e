"""How this code reads Indeed's answers: each job's result of an upsert or an expiry, and
each job's post status.

Errors come as HTTP 200 with `errors[]` and `extensions.code` (BAD_USER_INPUT: the job's
content), a refused job's result being null with an error whose `path` ends at its index;
HTTP status codes only for rate limiting (429) and the network (troubleshoot-errors). Indeed
answers a missing, invalid or expired token "Client is not authorized" (FORBIDDEN); for a call
as a whole that, UNAUTHENTICATED, or HTTP 401 is `TokenRefused`. An upsert's answer gives each
job a `sourcedPostingId`, Indeed's own id and the only one an expiry takes ("Make sure you
always save the sourcedPostingId value"). Expiring a job Indeed no longer knows ("not found")
is done.

A job's post status (`JobPostStatus`: `isRejected`, `lifecycleStatus`): a success means
received ("Indeed indexes the job and makes it available, pending spam and fraud detection,
in minutes to hours"); ACTIVE is live; rejected is not listed. Indeed gives no URL for a job.
"""

from __future__ import annotations

from typing import Any

from consumers.boards import Answer, excerpt, refused, whole_call
from consumers.boards.base import (
    BoardListing,
    CallFailed,
    Delivered,
    ElementOutcome,
    JobAction,
    Operation,
    Rejected,
    TokenRefused,
    Unsure,
)
from consumers.boards.indeed.request import EXPIRE_FIELD, UPSERT_FIELD
from schemas.enums import ListingStatus

REJECTED = "Indeed does not show the job: its job post status says it is rejected (isRejected)"
INACTIVE = "Indeed lists the job as inactive (lifecycleStatus INACTIVE)"
# Codes about what was sent (one job's, when the error's path names it).
REFUSING = {"BAD_USER_INPUT", "BAD_REQUEST", "GRAPHQL_VALIDATION_FAILED", "GRAPHQL_PARSE_FAILED", "NOT_FOUND"}
CREDENTIALS = {"UNAUTHENTICATED", "FORBIDDEN"}


def results(answer: Answer, count: int, field: str) -> list[tuple[ElementOutcome, str | None]]:
    """Each job's outcome, and for an upsert the `sourcedPostingId` Indeed gave it."""
    if (refusal := whole_call(answer, count)) is not None:
        return [(outcome, None) for outcome in refusal]
    body = answer.json()
    if not isinstance(body, dict):
        raise answer.unintelligible("is not a GraphQL answer")
    errors = body.get("errors") or []
    if not (isinstance(errors, list) and all(isinstance(e, dict) for e in errors)):
        raise answer.unintelligible("has errors of an unknown shape")
    found = _dig(body, "data", "jobsIngest", field, "results")
    if found is None:
        return _call_refused(answer, errors, count)
    if not isinstance(found, list) or len(found) != count:
        raise answer.unintelligible(f"has no {count} results")
    per_job: dict[int, list[dict[str, Any]]] = {}
    for error in errors:
        if (index := _index(error)) is not None and 0 <= index < count:
            per_job.setdefault(index, []).append(error)
    unplaced = [e for e in errors if _index(e) is None]
    return [_outcome(result, per_job.get(i, []), unplaced, field) for i, result in enumerate(found)]


def statuses(answer: Answer, asked: list[str]) -> dict[str, BoardListing]:
    """The post status of each job of `asked` (by sourcedPostingId) Indeed knows."""
    if whole_call(answer, 1) is not None:
        raise CallFailed(f"{answer.board} refused the status read ({answer.status}): {excerpt(answer.text)}")
    body = answer.json()
    nodes = _dig(body, "data", "nodes")
    if not isinstance(nodes, list) or len(nodes) != len(asked):
        errors = body.get("errors") if isinstance(body, dict) else None
        if errors and isinstance(errors, list) and _codes(errors) & CREDENTIALS:
            raise TokenRefused(_describe(errors))
        raise answer.unintelligible(f"has no {len(asked)} job post statuses")
    found: dict[str, BoardListing] = {}
    for sourced_id, node in zip(asked, nodes, strict=True):
        status = _dig(node, "status")
        if not isinstance(status, dict):
            continue  # a job Indeed does not know for this client: unknown
        lifecycle = status.get("lifecycleStatus")
        if status.get("isRejected") is True:
            found[sourced_id] = BoardListing(ListingStatus.CLOSED_BY_BOARD, reason=REJECTED)
        elif lifecycle == "ACTIVE":
            found[sourced_id] = BoardListing(ListingStatus.LIVE)
        elif lifecycle == "INACTIVE":
            found[sourced_id] = BoardListing(ListingStatus.CLOSED, reason=INACTIVE)
        else:
            found[sourced_id] = BoardListing(None)  # PENDING: indexing, not decided yet
    return found


def closing(outcome: ElementOutcome) -> ElementOutcome:
    """A close whose upsert (to learn the job's sourcedPostingId) did not go through."""
    why = "to expire the job Indeed must name its sourcedPostingId, and its upsert"
    if isinstance(outcome, Rejected):
        return Rejected(f"{why} was refused: {outcome.reason}")
    if isinstance(outcome, Unsure):
        return Unsure(f"{why} failed: {outcome.reason}", outcome.retry_after_s)
    return Unsure(f"{why} gave no id")


def after_expiry(
    action: JobAction, outcome: ElementOutcome | None, expired: list[tuple[str, ElementOutcome]]
) -> ElementOutcome:
    """A job's outcome once the expiries it called for were answered (`expired`: each
    sourcedPostingId's, its own job's first). A close is done when every one is expired
    (`gone`: its own job was gone already). An upsert stays delivered when every job it
    replaced is expired; otherwise its outcome is the expiry's failure, naming the new job's
    id and the jobs not expired, which the posting's state keeps until they are."""
    failed = [(sourced_id, o) for sourced_id, o in expired if not isinstance(o, Delivered)]
    if action.operation == Operation.CLOSE:
        return failed[0][1] if failed else expired[0][1]
    assert isinstance(outcome, Delivered) and outcome.job_id is not None
    if not failed:
        return outcome
    unexpired = tuple(sourced_id for sourced_id, _ in failed)
    first = failed[0][1]
    reason = first.reason if isinstance(first, Rejected | Unsure) else repr(first)
    why = (
        f"indeed made the version a new job ({outcome.job_id}); expiring the job it replaced "
        f"({', '.join(unexpired)}) failed: {reason}"
    )
    if isinstance(first, Rejected):
        return Rejected(why, job_id=outcome.job_id, unexpired=unexpired)
    retry_after_s = first.retry_after_s if isinstance(first, Unsure) else None
    return Unsure(why, retry_after_s, job_id=outcome.job_id, unexpired=unexpired)


def _outcome(
    result: Any, errors: list[dict[str, Any]], unplaced: list[dict[str, Any]], field: str
) -> tuple[ElementOutcome, str | None]:
    if errors:
        detail = _describe(errors)
        if field == EXPIRE_FIELD and _unknown_job(errors):
            return Delivered(gone=True), None  # nothing left to expire
        return (Rejected(detail) if _codes(errors) & REFUSING else Unsure(detail)), None
    if field == UPSERT_FIELD:
        sourced_id = _dig(result, "jobPosting", "sourcedPostingId")
        if isinstance(sourced_id, str) and sourced_id:
            return Delivered(sourced_id), sourced_id
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


def _unknown_job(errors: list[dict[str, Any]]) -> bool:
    """An expiry refused because Indeed holds no such job (NOT_FOUND, or its message says
    so): the job is not live, which is what the close wanted."""
    return "NOT_FOUND" in _codes(errors) or any(
        "no job" in str(e.get("message", "")).lower() or "not found" in str(e.get("message", "")).lower()
        for e in errors
    )


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
