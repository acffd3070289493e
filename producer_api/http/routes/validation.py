"""`POST /postings:validate`: what each board a posting targets would make of it, without
writing anything, so an applicant-tracking system can check a posting before it submits."""

from __future__ import annotations

from fastapi import APIRouter

from producer_api.http.deps import Service, Settings, Writer
from producer_api.http.models import PostingIn, ProblemOut, ValidationOut
from producer_api.http.posting_body import check_limits, to_posting, verdicts

router = APIRouter(tags=["postings"])
PATH = "/postings:validate"


@router.post(
    PATH,
    response_model=ValidationOut,
    responses={
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope postings:write"},
        413: {"model": ProblemOut, "description": "the body is over the limit"},
        422: {"model": ProblemOut, "description": "not a posting (as `POST /postings` would answer)"},
        429: {"model": ProblemOut, "description": "the credential is over its request rate (Retry-After)"},
    },
)
async def validate_posting(
    body: PostingIn, service: Service, settings: Settings, caller: Writer
) -> ValidationOut:
    """The body `POST /postings` takes, checked as it would be, for the caller's employer:
    each board in `boards` with `listable` and, when it is not, one entry of `errors` per
    problem (board, pointer into the body, code, detail). A body that is not a posting is
    answered 422 as `POST /postings` answers it. Writes nothing."""
    check_limits(body, settings)
    return verdicts(service.listing(caller, to_posting(body)), body)
