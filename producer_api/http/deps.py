"""Request dependencies: the service, the settings, bearer-token auth, conditional headers."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from producer_api.callers import Caller, Scope, Unauthenticated
from producer_api.config import ApiSettings
from producer_api.http.identity import Identity
from producer_api.http.problems import Problem
from producer_api.service import PostingService

_bearer = HTTPBearer(
    auto_error=False,
    description="a development token (JOBPOST_API_TOKENS), a token of the credentials file, or an OIDC JWT",
)
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
    """The caller a bearer token stands for (401 for none, or a token no source knows),
    once its credential is within its request rate (else 429)."""
    identity: Identity = request.app.state.identity
    try:
        if credentials is None:
            raise Unauthenticated("missing", "no bearer token")
        caller = await identity.caller(credentials.credentials)
    except Unauthenticated:
        raise Problem(
            401, "Unauthorized", "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"}
        ) from None
    await identity.rate.check(caller.name)
    return caller


def requires(scope: Scope) -> Callable[[Caller], Awaitable[Caller]]:
    """A dependency: the caller, when its credential has `scope` (else 403)."""

    async def scoped(caller: Annotated[Caller, Depends(authenticate)]) -> Caller:
        if scope not in caller.scopes:
            raise Problem(403, "Forbidden", f"the credential {caller.name!r} lacks the scope {scope.value!r}")
        return caller

    return scoped


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
Reader = Annotated[Caller, Depends(requires(Scope.READ))]
Writer = Annotated[Caller, Depends(requires(Scope.WRITE))]
Settings = Annotated[ApiSettings, Depends(get_settings)]
ExpectedVersion = Annotated[int | None, Depends(expected_version)]
IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]
