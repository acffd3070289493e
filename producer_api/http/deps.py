"""Request dependencies: the service, the settings, bearer-token auth, conditional headers."""

from __future__ import annotations

import re
import secrets
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from producer_api.config import ApiSettings
from producer_api.http.problems import Problem
from producer_api.service import Caller, PostingService

_bearer = HTTPBearer(auto_error=False, description="a token from JOBPOST_API_TOKENS")
_ETAG = re.compile(r'^\s*(?:W/)?"?(\d{1,18})"?\s*$')
_IF_MATCH = r'^\s*(\*|(W/)?"?\d{1,18}"?)\s*$'
_IDEMPOTENCY_KEY = "^[\\x20-\\x7e]+$"  # IETF draft: 1-255 printable ASCII


# The conditional and idempotency headers, also checked item by item in a batch.
IfMatch = Annotated[
    str | None,
    Header(
        pattern=_IF_MATCH,
        description='The version the change applies to: the ETag of a read, e.g. `"3"` (`W/"3"`, '
        "`3` and `*` are accepted too); 412 when the posting is at another version.",
    ),
]
IdempotencyKeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=_IDEMPOTENCY_KEY,
        description="1-255 printable ASCII characters. A repeat of the same request (method and body) "
        "with the same key within 24 hours answers the original status and body and writes "
        "nothing; the same key with another body or method on this posting answers 422 "
        "(`.../idempotency-key-reused`).",
    ),
]


async def get_settings(request: Request) -> ApiSettings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def get_service(request: Request) -> PostingService:
    return request.app.state.service  # type: ignore[no-any-return]


async def authenticate(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    """The caller a bearer token stands for. A development token (`JOBPOST_API_TOKENS`) is
    named by its place in the list and may do everything, for the default employer."""
    tokens: list[str] = request.app.state.tokens
    offered = credentials.credentials.encode() if credentials else b""
    for number, token in enumerate(tokens, 1):
        if credentials and secrets.compare_digest(offered, token.encode()):
            return Caller(name=f"dev-token-{number}", operator=True)
    raise Problem(
        401, "Unauthorized", "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
    )


async def expected_version(if_match: IfMatch = None) -> int | None:
    return version_in(if_match)


def version_in(if_match: str | None) -> int | None:
    """The version an If-Match names; None for none or `*` (any version)."""
    if if_match is None or if_match.strip() == "*":
        return None
    match = _ETAG.match(if_match)
    if match is None:  # the header's pattern is checked before; this keeps the function honest alone
        raise Problem(422, "Invalid request", f"If-Match {if_match!r} is not a version of this API")
    return int(match.group(1))


async def idempotency_key(key: IdempotencyKeyHeader = None) -> str | None:
    return key


Service = Annotated[PostingService, Depends(get_service)]
CurrentCaller = Annotated[Caller, Depends(authenticate)]
Settings = Annotated[ApiSettings, Depends(get_settings)]
ExpectedVersion = Annotated[int | None, Depends(expected_version)]
IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]
