"""Request dependencies: the service, the settings, the caller a route admits (its scope
declared here, checked by `producer_api.http.gate`), conditional headers."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Header, Request

from producer_api.callers import Caller, Scope
from producer_api.config import ApiSettings
from producer_api.http.gate import Requires
from producer_api.http.problems import Problem
from producer_api.service import PostingService

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
# A route's caller, by the scope the route needs: every non-public route takes one of them.
Reader = Annotated[Caller, Depends(Requires(Scope.READ))]
Writer = Annotated[Caller, Depends(Requires(Scope.WRITE))]
Operator = Annotated[Caller, Depends(Requires(Scope.OPS))]
SnapshotTaker = Annotated[Caller, Depends(Requires(Scope.SNAPSHOT))]
Settings = Annotated[ApiSettings, Depends(get_settings)]
ExpectedVersion = Annotated[int | None, Depends(expected_version)]
IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]
