"""/healthz (the process lives) and /readyz (it can serve: which dependency is missing)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from producer_api.http.models import ReadinessOut

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=ReadinessOut,
    responses={503: {"model": ReadinessOut, "description": "not ready: `reasons` names what is missing"}},
)
async def readyz(request: Request) -> JSONResponse:
    """200 when this replica can accept a write and serve a read; `checks` says which part
    is ready, `reasons` why another is not."""
    checks = await request.app.state.readiness.check()
    reasons = {name: why for name, why in checks.items() if why is not None}
    body = {
        "status": "not ready" if reasons else "ready",
        "checks": {name: why is None for name, why in checks.items()},
        "reasons": reasons,
    }
    return JSONResponse(body, status_code=503 if reasons else 200)
