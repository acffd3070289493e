"""The sandbox's HTTP layer: the imitated endpoints of both boards, their token endpoints,
and the control surface of CONTRACT.md's "Job-board sandbox". Each route only translates:
the boards' rules are in `linkedin`, `indeed`, `tasks`, `limits` and `tokens`."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import parse_qsl

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response

from jobpost_dev.sandbox import indeed, linkedin
from jobpost_dev.sandbox.faults import Faults
from jobpost_dev.sandbox.gate import Gate, Outages
from jobpost_dev.sandbox.indeed import IndeedBoard
from jobpost_dev.sandbox.limits import Limits, limits_for
from jobpost_dev.sandbox.linkedin import LinkedInBoard
from jobpost_dev.sandbox.state import BadKeys, BoardState, Clock, element_keys
from jobpost_dev.sandbox.tokens import token_request

Board = Literal["linkedin", "indeed"]  # schemas.topics.BOARDS, as FastAPI checks a path (a unit test agrees)
NO_END_S = 365 * 24 * 3600  # the `expires_in` of a token issued with no lifetime


def create_sandbox(clock: Clock | None = None) -> Outages:
    clock = clock or Clock()
    li, ind = LinkedInBoard(), IndeedBoard()
    boards: dict[str, BoardState] = {"linkedin": li, "indeed": ind}
    li_gate = Gate(li, clock, linkedin.unauthorized, linkedin.whole_call)
    ind_gate = Gate(ind, clock, lambda _check: indeed.unauthorized(), _indeed_refusal)
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
            "access_token": board.tokens.issue(clock.now(), ttl),
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

    @app.post("/linkedin/rest/simpleJobPostings")
    async def linkedin_jobs(request: Request) -> Response:
        if (refused := li_gate.authorize(request)) is not None:
            return refused
        if request.headers.get("x-restli-method") != "batch_create":
            return linkedin.whole_call(400, "x-restli-method: batch_create expected")
        if not request.headers.get("linkedin-version"):
            return linkedin.whole_call(400, "A version must be present: the LinkedIn-Version header (YYYYMM)")
        body = await _json(request)
        elements = body.get("elements") if isinstance(body, dict) else None
        if not isinstance(elements, list) or not elements:
            return linkedin.whole_call(400, "the body must be {elements: [...]} with at least one job")
        if (most := li.limits.batch_max) is not None and len(elements) > most:
            return linkedin.whole_call(400, f"{len(elements)} jobs in one call: at most {most}")
        try:
            keys = element_keys(request.headers.get("idempotency-key"), len(elements))
            fault = await li_gate.admit(len(elements), [posting_id for posting_id, _ in keys])
            if isinstance(fault, Response):
                return fault
            answers = li.submit(elements, keys, clock.now(), clock.wall_ms())
        except BadKeys as exc:
            return linkedin.whole_call(400, str(exc))
        return Gate.answer(JSONResponse({"elements": answers}), fault)

    @app.get("/linkedin/rest/simpleJobPostingTasks")
    async def linkedin_tasks(request: Request) -> Response:
        if (refused := li_gate.authorize(request)) is not None:
            return refused
        ids = request.query_params.getlist("ids")
        if (bad := linkedin.bad_task_ids(ids, request.url.query.encode())) is not None:
            return bad
        fault = await li_gate.admit(0, [])
        if isinstance(fault, Response):
            return fault
        return Gate.answer(JSONResponse(li.task_answer(ids, clock.now())), fault)

    @app.post("/indeed/graphql")
    async def indeed_graphql(request: Request) -> Response:
        if (refused := ind_gate.authorize(request)) is not None:
            return refused
        body = await _json(request)
        query = body.get("query") if isinstance(body, dict) else None
        found = [m for m in (indeed.UPSERT, indeed.EXPIRE) if isinstance(query, str) and m in query]
        if len(found) != 1:
            return indeed.whole_call(200, "GRAPHQL_VALIDATION_FAILED", "one jobsIngest mutation expected")
        mutation = found[0]
        variables = body.get("variables")
        given = variables.get("input") if isinstance(variables, dict) else None
        items = (
            given.get("jobPostings" if mutation == indeed.UPSERT else "jobs")
            if isinstance(given, dict)
            else None
        )
        if not isinstance(items, list) or not items:
            return indeed.whole_call(200, "BAD_USER_INPUT", "Variable 'input' has an invalid value")
        if (most := ind.limits.batch_max) is not None and len(items) > most:
            return indeed.whole_call(200, "BAD_USER_INPUT", f"{len(items)} jobs in one call: at most {most}")
        try:
            keys = element_keys(request.headers.get("idempotency-key"), len(items))
            fault = await ind_gate.admit(len(items), [posting_id for posting_id, _ in keys])
            if isinstance(fault, Response):
                return fault
            answer = ind.mutate(mutation, items, keys, clock.wall_ms())
        except BadKeys as exc:
            return indeed.whole_call(400, "BAD_REQUEST", str(exc))
        return Gate.answer(JSONResponse(answer), fault)

    @app.get("/_sandbox/{board}/faults")
    async def get_faults(board: Board) -> Faults:
        return boards[board].faults

    @app.put("/_sandbox/{board}/faults")
    async def set_faults(board: Board, faults: Faults) -> Faults:
        boards[board].faults = faults
        return faults

    @app.get("/_sandbox/{board}/limits")
    async def get_limits(board: Board) -> Limits:
        return boards[board].limits

    @app.put("/_sandbox/{board}/limits")
    async def set_limits(board: Board, asked: Limits) -> Limits:
        try:
            boards[board].limits = limits_for(board, asked)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        return boards[board].limits

    @app.get("/_sandbox/{board}/stats")
    async def stats(board: Board) -> dict[str, int]:
        return boards[board].stats.to_json()

    @app.get("/_sandbox/{board}/postings/{posting_id}")
    async def inspect(board: Board, posting_id: str) -> dict[str, Any]:
        li.tasks.settle(clock.now(), li.postings)  # tasks end on time, whether anyone asks or not
        posting = boards[board].postings.get(posting_id)
        if posting is None or not posting.requests:
            raise HTTPException(404, "the board never saw this posting")
        return posting.to_json()

    @app.delete("/_sandbox")
    async def reset() -> dict[str, str]:
        for state in boards.values():
            state.reset()
        return {"status": "reset"}

    return Outages(app, boards)


def _indeed_refusal(status: int, message: str, headers: dict[str, str] | None) -> Response:
    code = {429: "TOO_MANY_REQUESTS", 503: "INTERNAL_SERVER_ERROR"}.get(status, "BAD_USER_INPUT")
    return indeed.whole_call(status, code, message, headers)


async def _json(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:  # UnicodeDecodeError is a ValueError too
        return None
