"""The sandbox's HTTP app: both boards' token endpoints and imitated APIs, and the control
surface of CONTRACT.md's "Job-board sandbox". The routes only translate: each board's rules
are in its package (`linkedin`, `indeed`), budgets in `limits` and `gate`, tokens in
`tokens`, time in `clock`."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from jobpost_dev.sandbox import control
from jobpost_dev.sandbox.clock import Clock
from jobpost_dev.sandbox.gate import Outages
from jobpost_dev.sandbox.indeed import api as indeed_api
from jobpost_dev.sandbox.indeed.board import IndeedBoard
from jobpost_dev.sandbox.linkedin import api as linkedin_api
from jobpost_dev.sandbox.linkedin.board import LinkedInBoard
from jobpost_dev.sandbox.refusals import RefusalLog
from jobpost_dev.sandbox.state import BoardState
from jobpost_dev.sandbox.tokens import token_request

Board = control.Board
NO_END_S = 365 * 24 * 3600  # the `expires_in` of a token issued with no lifetime


def create_sandbox(clock: Clock | None = None, refusals: RefusalLog | None = None) -> Outages:
    clock = clock or Clock()
    refusals = refusals or RefusalLog.from_env()
    li, ind = LinkedInBoard(refusals=refusals), IndeedBoard(refusals=refusals)
    app = FastAPI(title="jobpost job-board sandbox")

    async def issue(board: BoardState, request: Request, expires_as_text: bool) -> Response:
        form = dict(parse_qsl((await request.body()).decode("utf-8", errors="replace")))
        status, error = token_request(request.headers.get("content-type"), form)
        if status != 200:
            return JSONResponse(error, status)
        ttl = board.limits.token_ttl_s
        board.stats.tokens_issued += 1
        expires_in: float = (
            NO_END_S if ttl is None else int(ttl) if ttl == int(ttl) else ttl
        )  # a test's 0.5 s
        answer: dict[str, Any] = {
            "access_token": board.tokens.issue(clock.now(), ttl, form["client_id"]),
            "expires_in": str(expires_in) if expires_as_text else expires_in,
            "token_type": "Bearer",
        }
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    @app.post("/linkedin/oauth/v2/accessToken")
    async def linkedin_token(request: Request) -> Response:
        return await issue(li, request, expires_as_text=True)  # LinkedIn's page shows "1800"

    @app.post("/indeed/oauth/v2/tokens")
    async def indeed_token(request: Request) -> Response:
        return await issue(ind, request, expires_as_text=False)

    app.include_router(linkedin_api.routes(li, clock, _json))
    app.include_router(indeed_api.routes(ind, clock, _json))
    app.include_router(control.routes(li, ind, clock))
    return Outages(app, {"linkedin": li, "indeed": ind})


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return None
