"""`POST /postings:batch`: up to 100 creates, replacements and deletes in one request, each
answered as the same request alone would be. Translates HTTP to the service's own writes
(`producer_api.batch`) and their results back, item by item."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from producer_api import batch
from producer_api.batch import Write, WriteResult
from producer_api.http import present
from producer_api.http.answers import problem_for
from producer_api.http.batch_items import write_of
from producer_api.http.batch_models import BatchIn, BatchOut
from producer_api.http.deps import Service, Settings, Writer
from producer_api.http.gate import charge
from producer_api.http.models import DeletedOut, ProblemOut
from producer_api.http.problems import Problem
from producer_api.read.views import PostingView
from schemas.model import Action

router = APIRouter(tags=["postings"])
PATH = "/postings:batch"

DESCRIPTION = f"""Up to {batch.MAX_ITEMS} writes in one request, for the syncs an applicant-tracking
system runs. Each item is the request it stands for — `create` is `POST /postings`, `replace`
`PUT /postings/{{id}}`, `delete` `DELETE /postings/{{id}}`, with `if_match` and
`idempotency_key` as the headers — and is answered as that request alone would be:

- **201** created (headers `Location`, `ETag`), **200** replaced (`ETag`) or deleted, with the
  posting in `posting`;
- **404** no such posting, **410** deleted, **412** another version than `if_match` (`ETag`:
  the current one), **409** exists already, **422** invalid or the key reused for another
  request (the same problem, `errors` included, as alone), **503** not in time (`Retry-After`;
  retry with the same key), with the problem in `problem`.

Items succeed or fail on their own: the answer is 200 whatever they came to, one item per
item sent, in order. Each is idempotent by its own `idempotency_key`, scoped like the
header (the posting and the op): a batch sent again, or an item sent alone with the same
key, applies nothing twice. Items of one posting apply in the order given; the others are
sequenced together (a batch's commands share few transactions). The request as a whole is
refused only when it is not a batch: 413 over `JOBPOST_API_MAX_BATCH_BODY_BYTES`, 422 with no
items, more than {batch.MAX_ITEMS}, an unknown field, an unknown `op` or an item that is not
an object. It needs the scope `postings:write`, and each item counts as one request
against the credential's rate (429 for the whole batch, nothing written, when they take it
over)."""


@router.post(
    PATH,
    response_model=BatchOut,
    description=DESCRIPTION,
    responses={
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope `postings:write`"},
        429: {
            "model": ProblemOut,
            "description": "the items take the credential over its rate (Retry-After), or are more"
            " than its rate allows at once (no Retry-After: split the batch)",
        },
        413: {"model": ProblemOut, "description": "the body is over the batch limit"},
        422: {"model": ProblemOut, "description": "not a batch (each item's own problems are in its answer)"},
    },
)
async def write_batch(
    body: BatchIn, request: Request, service: Service, settings: Settings, caller: Writer
) -> Response:
    await charge(request, caller, len(body.items) - 1)  # the gate counted the request itself
    checked = [write_of(item, settings, service, caller) for item in body.items]
    results = iter(await batch.apply(service, caller, [w for w in checked if isinstance(w, Write)]))
    items = [_refused(w) if isinstance(w, Problem) else answer(w, next(results)) for w in checked]
    # Built here rather than through BatchOut (which documents it): each posting and problem
    # exactly as the single route's answer has it, nulls included where it has them.
    return JSONResponse({"items": items})


def answer(write: Write, result: WriteResult) -> dict[str, Any]:
    """One item's answer: what the single route would have answered for this result."""
    if not isinstance(result, PostingView):
        return _refused(problem_for(result))
    if write.action == Action.DELETE:
        return _item(200, {}, DeletedOut(id=result.id, version=result.version).model_dump())
    etag = {"ETag": f'"{result.version}"'}
    posting = present.posting(result).model_dump()
    if write.action == Action.CREATE:
        return _item(201, {"Location": f"/postings/{result.id}", **etag}, posting)
    return _item(200, etag, posting)


def _refused(problem: Problem) -> dict[str, Any]:
    return {"status": problem.status, "headers": problem.headers, "problem": problem.body()}


def _item(status: int, headers: dict[str, str], posting: dict[str, Any]) -> dict[str, Any]:
    return {"status": status, "headers": headers, "posting": posting}
