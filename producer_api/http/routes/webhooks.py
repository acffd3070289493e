"""/webhooks: an employer's endpoints for events pushed to it (Standard Webhooks). Entry
points only translate HTTP to the service (`producer_api.webhook_service`). Each declares its scope
as its caller (`Reader`: postings:read, `Writer`: postings:write), which the gate checks
before the body is read."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Path, Query, Request, Response, status

from producer_api.http.deps import Reader, Settings, Writer
from producer_api.http.models import ProblemOut
from producer_api.http.problems import Problem, validation_problem
from producer_api.http.webhook_models import (
    LetterOut,
    LettersOut,
    ReplayIn,
    ReplayOut,
    RotatedOut,
    WebhookCreatedOut,
    WebhookDeletedOut,
    WebhookIn,
    WebhookOut,
    WebhooksOut,
)
from producer_api.webhook_service import WebhookNotFound, WebhookService, url_problem
from schemas.listing_events import rfc3339

router = APIRouter(
    prefix="/webhooks",
    tags=["webhooks"],
    responses={
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope this call needs"},
        429: {"model": ProblemOut, "description": "the credential is over its request rate (Retry-After)"},
        503: {
            "model": ProblemOut,
            "description": "not done, nothing changed: Kafka did not acknowledge it, the view is behind, or "
            "webhooks are off (no JOBPOST_WEBHOOK_SECRETS_KEY); retry after `Retry-After`",
        },
    },
)
EndpointId = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$")]
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ProblemOut, "description": "no endpoint of the caller's employer has this id"}
}
_INVALID: dict[int | str, dict[str, Any]] = {422: {"model": ProblemOut, "description": "invalid request"}}


def _service(request: Request) -> WebhookService:
    return request.app.state.webhooks  # type: ignore[no-any-return]


Webhooks = Annotated[WebhookService, Depends(_service)]
T = TypeVar("T")


@router.post("", status_code=status.HTTP_201_CREATED, response_model=WebhookCreatedOut, responses=_INVALID)
async def register(
    body: WebhookIn, response: Response, webhooks: Webhooks, settings: Settings, caller: Writer
) -> WebhookCreatedOut:
    """Register an endpoint for the caller's employer's events. The answer carries its
    signing secret, shown this once; it is answered once Kafka keeps the registration."""
    problem = url_problem(body.url, settings.webhook_local_http)
    if problem is not None:
        raise validation_problem([{"loc": ["body", "url"], "msg": problem, "type": "value_error"}])
    made = await webhooks.register(caller, body.url, tuple(dict.fromkeys(body.events)))
    response.headers["Location"] = f"/webhooks/{made.endpoint.id}"
    return WebhookCreatedOut(**WebhookOut.of(made.endpoint).model_dump(), secret=made.secret)


@router.get("", response_model=WebhooksOut)
async def list_webhooks(webhooks: Webhooks, caller: Reader) -> WebhooksOut:
    """The caller's employer's endpoints, oldest first (no secrets)."""
    return WebhooksOut(webhooks=[WebhookOut.of(e) for e in await webhooks.endpoints_of(caller)])


@router.get("/{endpoint_id}", response_model=WebhookOut, responses=_NOT_FOUND)
async def read_webhook(endpoint_id: EndpointId, webhooks: Webhooks, caller: Reader) -> WebhookOut:
    return WebhookOut.of(await _found(webhooks.get(caller, endpoint_id)))


@router.delete("/{endpoint_id}", response_model=WebhookDeletedOut, responses=_NOT_FOUND)
async def delete_webhook(endpoint_id: EndpointId, webhooks: Webhooks, caller: Writer) -> WebhookDeletedOut:
    """Nothing is delivered to the endpoint any more, what waits for it included."""
    await _found(webhooks.delete(caller, endpoint_id))
    return WebhookDeletedOut(id=endpoint_id, deleted=True)


@router.post("/{endpoint_id}/rotate", response_model=RotatedOut, responses=_NOT_FOUND)
async def rotate_secret(endpoint_id: EndpointId, webhooks: Webhooks, caller: Writer) -> RotatedOut:
    """A new signing secret, shown this once. The previous one keeps signing beside it until
    `previous_secret_until` (each delivery carries a signature per secret, space-separated),
    so a receiver can switch without missing a delivery."""
    made, until = await _found(webhooks.rotate(caller, endpoint_id))
    return RotatedOut(id=made.endpoint.id, secret=made.secret, previous_secret_until=until)


@router.post(
    "/{endpoint_id}/replay",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=ReplayOut,
    responses={**_NOT_FOUND, **_INVALID},
)
async def replay(endpoint_id: EndpointId, body: ReplayIn, webhooks: Webhooks, caller: Writer) -> ReplayOut:
    """Deliver the endpoint's events since a time again, each with its own `webhook-id` (a
    receiver that saw one already recognises it). Answered once the request is kept; the
    deliveries follow, in order per posting."""
    since = int(body.since.timestamp() * 1000)
    request = await _found(webhooks.replay(caller, endpoint_id, since))
    return ReplayOut(request_id=request.request_id, endpoint_id=request.endpoint_id, since=rfc3339(since))


@router.get("/{endpoint_id}/dead-letters", response_model=LettersOut, responses=_NOT_FOUND)
async def dead_letters(
    endpoint_id: EndpointId,
    webhooks: Webhooks,
    caller: Reader,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> LettersOut:
    """The events given up on for this endpoint (retries spent, or the endpoint disabled),
    newest first. A replay from before one delivers it again."""
    letters = await _found(webhooks.dead_letters(caller, endpoint_id, limit))
    return LettersOut(letters=[LetterOut.model_validate(letter.__dict__) for letter in letters])


async def _found(call: Awaitable[T]) -> T:
    """The service's answer; 404 for an endpoint the caller does not have."""
    try:
        return await call
    except WebhookNotFound as exc:
        raise Problem(404, "Not found", "no webhook endpoint of the caller's employer has this id") from exc
