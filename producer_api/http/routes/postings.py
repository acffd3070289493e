"""/postings: create, read, replace, delete. Entry points only translate HTTP to the service."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response, status

from producer_api.http import present
from producer_api.http.deps import (
    ExpectedVersion,
    IdempotencyKey,
    Reader,
    Service,
    Settings,
    Writer,
)
from producer_api.http.models import DeletedOut, DeliveriesOut, PostingIn, PostingOut, ProblemOut, SearchPage
from producer_api.http.ops_models import TimelineOut
from producer_api.http.posting_body import check_limits, refusal, to_posting
from producer_api.read.views import PostingView

# Each route takes its caller as a `Reader` or a `Writer`: the scope it needs.
router = APIRouter(
    prefix="/postings",
    tags=["postings"],
    responses={
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope this call needs"},
        422: {
            "model": ProblemOut,
            "description": "invalid request; for a write, also a posting a board it targets would refuse "
            "(`…/not-listable`, one entry of `errors` per problem: board, pointer, code, detail)",
        },
        429: {"model": ProblemOut, "description": "the credential is over its request rate (Retry-After)"},
    },
)
PostingId = Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:-]+$")]
_REFUSED: dict[int | str, dict[str, Any]] = {
    404: {"model": ProblemOut, "description": "no posting of the caller's employer has this id"},
    410: {"model": ProblemOut, "description": "the posting was deleted"},
}
_UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {"model": ProblemOut, "description": "not served now (the view or search is behind); retry"}
}
# What a write's failures promise, and which retries are safe.
_WRITE_UNAVAILABLE: dict[int | str, dict[str, Any]] = {
    503: {
        "model": ProblemOut,
        "description": "**not applied, and never will be** (the sequencer did not reach it within its "
        "budget, or it never reached Kafka): safe to retry after `Retry-After`, with or without an "
        "Idempotency-Key",
    },
    504: {
        "model": ProblemOut,
        "description": "**outcome unknown** (problem type `…/outcome-unknown`): no verdict in time; the "
        "write may have been applied, or may still be until `Retry-After` seconds have passed, never "
        "after. Retry with the same Idempotency-Key (an applied write answers as it did), or read the "
        "posting with `?consistency=strong` after `Retry-After`. Without a key a retry may apply it twice",
    },
}


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=PostingOut,
    responses={409: {"model": ProblemOut}, 413: {"model": ProblemOut}, **_WRITE_UNAVAILABLE},
)
async def create_posting(
    body: PostingIn,
    response: Response,
    service: Service,
    settings: Settings,
    key: IdempotencyKey,
    caller: Writer,
) -> PostingOut:
    check_limits(body, settings)
    posting = to_posting(body)
    if (refused := refusal(service.listing(caller, posting), body)) is not None:
        raise refused
    view = await service.create(caller, posting, key)
    response.headers["Location"] = f"/postings/{view.id}"
    return _present(view, response)


@router.get("", response_model=SearchPage, responses=_UNAVAILABLE)
async def search_postings(
    service: Service,
    caller: Reader,
    q: Annotated[str, Query(min_length=1, max_length=200, description="words of the title")],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[
        str | None,
        Query(
            max_length=500,
            pattern="^[A-Za-z0-9_-]+$",
            description="opaque (URL-safe base64): the `next_cursor` of the page before",
        ),
    ] = None,
) -> SearchPage:
    """Active postings of the caller's employer whose title matches `q`, best first."""
    return present.search_page(*await service.search(caller, q, limit, cursor))


@router.get("/{posting_id}", response_model=PostingOut, responses={**_REFUSED, **_UNAVAILABLE})
async def read_posting(
    posting_id: PostingId,
    response: Response,
    service: Service,
    settings: Settings,
    caller: Reader,
    consistency: Annotated[
        Literal["eventual", "strong"],
        Query(description="strong: see every write committed before this request"),
    ] = "eventual",
) -> PostingOut:
    view = await service.get(caller, posting_id, consistency == "strong", settings.strong_read_timeout_s)
    return _present(view, response)


@router.get("/{posting_id}/deliveries", response_model=DeliveriesOut, responses={404: _REFUSED[404]})
async def posting_deliveries(posting_id: PostingId, service: Service, caller: Reader) -> DeliveriesOut:
    """How far each destination (LinkedIn, Indeed, search) has got with the posting."""
    return present.deliveries(*service.deliveries(caller, posting_id))


@router.get("/{posting_id}/timeline", response_model=TimelineOut, responses={404: _REFUSED[404]})
async def posting_timeline(posting_id: PostingId, service: Service, caller: Reader) -> TimelineOut:
    """The posting's versions, and what each came to at LinkedIn, Indeed and search: one
    cell per version and destination, and the delivery events behind them."""
    return present.timeline(service.timeline(caller, posting_id))


@router.put(
    "/{posting_id}",
    response_model=PostingOut,
    responses={**_REFUSED, 412: {"model": ProblemOut}, 413: {"model": ProblemOut}, **_WRITE_UNAVAILABLE},
)
async def replace_posting(
    posting_id: PostingId,
    body: PostingIn,
    response: Response,
    service: Service,
    settings: Settings,
    expected: ExpectedVersion,
    key: IdempotencyKey,
    caller: Writer,
) -> PostingOut:
    check_limits(body, settings)
    posting = to_posting(body)
    if (refused := refusal(service.listing(caller, posting, posting_id), body)) is not None:
        raise refused
    view = await service.replace(caller, posting_id, posting, key, expected)
    return _present(view, response)


@router.delete(
    "/{posting_id}",
    response_model=DeletedOut,
    responses={**_REFUSED, 412: {"model": ProblemOut}, **_WRITE_UNAVAILABLE},
)
async def delete_posting(
    posting_id: PostingId,
    service: Service,
    expected: ExpectedVersion,
    key: IdempotencyKey,
    caller: Writer,
) -> DeletedOut:
    return present.deleted(await service.delete(caller, posting_id, key, expected))


def _present(view: PostingView, response: Response) -> PostingOut:
    response.headers["ETag"] = f'"{view.version}"'
    return present.posting(view)
