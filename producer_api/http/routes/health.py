"""/healthz (the process lives) and /readyz (what it can serve now: writes, reads, search)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from producer_api.http.models import ReadinessOut
from producer_api.http.problems import Problem
from producer_api.readiness import CAPABILITIES

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=ReadinessOut,
    responses={503: {"model": ReadinessOut, "description": "not ready: `reasons` names what is missing"}},
)
async def readyz(
    request: Request,
    for_: Annotated[
        str | None,
        Query(
            alias="for",
            description="the capabilities that decide the status, comma-separated: writes, reads, "
            "search (default: all of them, so 200 means this replica can take a write, serve a "
            "read and search)",
            examples=["writes", "reads,search"],
        ),
    ] = None,
) -> JSONResponse:
    """200 when this replica can serve what `for` names (by default everything: take a
    write, serve a read, search); `capabilities` and `checks` say which part is ready,
    `reasons` why another is not."""
    asked = _capabilities(for_)
    report = await request.app.state.readiness.report()
    reasons = {name: why for name, why in report.checks.items() if why is not None}
    reasons |= {name: why for name, why in report.capabilities.items() if why is not None}
    ready = all(report.capabilities[name] is None for name in asked)
    body = {
        "status": "ready" if ready else "not ready",
        "capabilities": {name: why is None for name, why in report.capabilities.items()},
        "checks": {name: why is None for name, why in report.checks.items()},
        "reasons": reasons,
    }
    return JSONResponse(body, status_code=200 if ready else 503)


def _capabilities(asked: str | None) -> list[str]:
    if asked is None:
        return list(CAPABILITIES)
    names = [name.strip() for name in asked.split(",") if name.strip()]
    unknown = [name for name in names if name not in CAPABILITIES]
    if unknown or not names:
        raise Problem(
            422,
            "Invalid request",
            f"`for` names capabilities among {', '.join(CAPABILITIES)}; not {', '.join(unknown) or 'none'}",
        )
    return names
