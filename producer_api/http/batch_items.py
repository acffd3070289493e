"""Each item of `POST /postings:batch` checked as the single route checks its request: the
same rules (the route's own path, header and body types, the settings' limits), the same
errors in the same order and places (`header`, `path`, `body`), so an invalid item is
refused with the problem the same request alone gets. Only what has no single-request form
is the batch's own: a field the op does not take (an `id` on a create, a `posting` on a
delete, an `if_match` on a create)."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from producer_api.batch import Write
from producer_api.callers import Caller
from producer_api.config import ApiSettings
from producer_api.http.batch_models import BatchItemIn
from producer_api.http.deps import IdempotencyKeyHeader, IfMatch, version_in
from producer_api.http.models import PostingIn
from producer_api.http.posting_body import check_limits, refusal, to_posting
from producer_api.http.problems import Problem, validation_errors, validation_problem
from producer_api.http.routes.postings import PostingId
from producer_api.service import PostingService
from schemas.model import Action, Posting

_IF_MATCH: TypeAdapter[str | None] = TypeAdapter(IfMatch)
_KEY: TypeAdapter[str | None] = TypeAdapter(IdempotencyKeyHeader)
_ID: TypeAdapter[str] = TypeAdapter(PostingId)
_POSTING: TypeAdapter[PostingIn] = TypeAdapter(PostingIn)

_ACTIONS = {"create": Action.CREATE, "replace": Action.REPLACE, "delete": Action.DELETE}
# The fields each op takes, and why the others are refused.
_NOT_TAKEN = {
    "create": {"id": "a create's id follows from its idempotency_key", "if_match": "a create has no version"},
    "replace": {},
    "delete": {"posting": "a delete carries no posting"},
}


def write_of(
    item: BatchItemIn, settings: ApiSettings, service: PostingService, caller: Caller
) -> Write | Problem:
    """The write the item asks for, or the problem it is refused with (a posting a board it
    targets would refuse included, pointed at the item's `posting`)."""
    misplaced = [
        {"loc": [name], "msg": f"not taken by {item.op}: {why}", "type": "extra_forbidden"}
        for name, why in _NOT_TAKEN[item.op].items()
        if getattr(item, name) is not None
    ]
    if misplaced:
        return validation_problem(misplaced)
    errors: list[dict[str, Any]] = []
    names_a_posting = item.op != "create"
    if names_a_posting:
        errors += _errors(_IF_MATCH, item.if_match, "header", "if-match")
    errors += _errors(_KEY, item.idempotency_key, "header", "Idempotency-Key")
    if names_a_posting:
        errors += _errors(_ID, item.id, "path", "posting_id", required=True)
    body = None
    if item.op != "delete":
        body, body_errors = _body(item)
        errors += body_errors
    if errors:
        return validation_problem(validation_errors(errors))
    posting: Posting | None = None
    if body is not None:
        try:
            check_limits(body, settings)
            posting = to_posting(body)
        except Problem as invalid:
            return invalid
        if (refused := refusal(service.listing(caller, posting, item.id), body)) is not None:
            return refused
    return Write(_ACTIONS[item.op], item.id, posting, item.idempotency_key, version_in(item.if_match))


def _errors(rule: TypeAdapter[Any], value: Any, *where: str, required: bool = False) -> list[dict[str, Any]]:
    if value is None:
        return [_missing(*where)] if required else []
    try:
        rule.validate_python(value)
    except ValidationError as exc:
        return [{**e, "loc": (*where, *e["loc"])} for e in exc.errors(include_url=False)]
    return []


def _body(item: BatchItemIn) -> tuple[PostingIn | None, list[dict[str, Any]]]:
    """The posting, read as FastAPI reads a body (attributes allowed, so a non-object says
    so the same way); absent is "missing", as an empty body is."""
    if "posting" not in item.model_fields_set:
        return None, [_missing("body")]
    try:
        return _POSTING.validate_python(item.posting, from_attributes=True), []
    except ValidationError as exc:
        return None, [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]


def _missing(*where: str) -> dict[str, Any]:
    return {"loc": where, "msg": "Field required", "type": "missing"}
