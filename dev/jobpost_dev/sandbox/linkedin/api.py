"""LinkedIn's HTTP surface as the sandbox serves it under `/linkedin`: the routes only
translate; `board` and `rules` decide.

- `POST /rest/simpleJobPostings` (create-jobs): headers `x-restli-method: batch_create` (its
  absence: "403 Not enough permissions to access: POST /simpleJobPostings") and
  `LinkedIn-Version`; `{elements: [...]}` of at most 100 jobs. HTTP 200 answers one status
  per element: 202 with the task's id, or the element's error.
- `GET /rest/simpleJobPostingTasks?ids=<task urn>&ids=…` (also under /v2, as
  check-job-taskstatus writes it): `{results, statuses, errors}`. An id that is not a task
  URN: 400 "Batch key parameter value is invalid"; a query string over 4 KB: 414 ("Ensure
  that the query string is limited to a maximum length of 4KB").
- `GET /v2/jobPostingStatus?ids=<externalJobPostingId>&ids=…` (LinkedIn's SDK path;
  check-job-posting-status: "Maximum limit of 100 jobs are supported per batch request").
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from jobpost_dev.sandbox.clock import Clock
from jobpost_dev.sandbox.gate import Gate
from jobpost_dev.sandbox.limits import JOB_STATUS, TASK_STATUS
from jobpost_dev.sandbox.linkedin.board import LinkedInBoard
from jobpost_dev.sandbox.linkedin.rules import TASK_URN
from jobpost_dev.sandbox.tokens import TokenCheck

QUERY_MAX_BYTES = 4096
STATUS_IDS_MAX = 100


def whole_call(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """LinkedIn's error body for a call refused as a whole."""
    return JSONResponse({"message": message, "status": status}, status, headers)


def unauthorized(check: TokenCheck) -> JSONResponse:
    # Both bodies are LinkedIn's (job_posting_v2.yaml, the 401 examples).
    if check is TokenCheck.EXPIRED:
        body = {
            "serviceErrorCode": 65602,
            "message": "The token used in the request has expired",
            "status": 401,
        }
    else:
        body = {"serviceErrorCode": 65600, "message": "Invalid access token", "status": 401}
    return JSONResponse(body, 401)


def routes(board: LinkedInBoard, clock: Clock, read_json: Any) -> APIRouter:
    gate = Gate(board, clock, unauthorized, whole_call)
    router = APIRouter(prefix="/linkedin")

    @router.post("/rest/simpleJobPostings")
    async def post_jobs(request: Request) -> Response:
        client = gate.authorize(request)
        if isinstance(client, Response):
            return client
        if request.headers.get("x-restli-method", "").lower() != "batch_create":
            return whole_call(403, "Not enough permissions to access: POST /simpleJobPostings")
        if not request.headers.get("linkedin-version"):
            return whole_call(400, "A version must be present: the LinkedIn-Version header (YYYYMM)")
        body = await read_json(request)
        elements = body.get("elements") if isinstance(body, dict) else None
        if not isinstance(elements, list) or not elements:
            return whole_call(400, "the body must be {elements: [...]} with at least one job")
        if (most := board.limits.batch_max) is not None and len(elements) > most:
            return whole_call(400, f"{len(elements)} jobs in one call: at most {most}")
        carried = list(dict.fromkeys(e["externalJobPostingId"] for e in elements if _has_id(e)))
        fault = await gate.admit(len(elements), carried)
        if isinstance(fault, Response):
            return fault
        answers = board.submit(elements, client, clock.now(), clock.wall_ms())
        return Gate.answer(JSONResponse({"elements": answers}), fault)

    async def get_tasks(request: Request) -> Response:
        client = gate.authorize(request)
        if isinstance(client, Response):
            return client
        ids = request.query_params.getlist("ids")
        if len(request.url.query.encode()) > QUERY_MAX_BYTES:
            return whole_call(414, f"the query string is over LinkedIn's {QUERY_MAX_BYTES} bytes")
        if not ids or any(not i.startswith(TASK_URN) or len(i) == len(TASK_URN) for i in ids):
            return whole_call(400, "Batch key parameter value is invalid")
        fault = await gate.admit(0, [], TASK_STATUS)
        if isinstance(fault, Response):
            return fault
        return Gate.answer(JSONResponse(board.task_answer(ids, clock.now())), fault)

    router.add_api_route("/rest/simpleJobPostingTasks", get_tasks, methods=["GET"])
    router.add_api_route("/v2/simpleJobPostingTasks", get_tasks, methods=["GET"])

    @router.get("/v2/jobPostingStatus")
    async def get_status(request: Request) -> Response:
        client = gate.authorize(request)
        if isinstance(client, Response):
            return client
        ids = request.query_params.getlist("ids")
        if len(request.url.query.encode()) > QUERY_MAX_BYTES:
            return whole_call(414, f"the query string is over LinkedIn's {QUERY_MAX_BYTES} bytes")
        if not ids or not all(ids):
            return whole_call(400, "Batch key parameter value is invalid")
        if len(ids) > STATUS_IDS_MAX:
            return whole_call(
                400, f"{len(ids)} ids: a maximum limit of {STATUS_IDS_MAX} jobs per batch request"
            )
        fault = await gate.admit(0, [], JOB_STATUS)
        if isinstance(fault, Response):
            return fault
        answer = board.status_answer(ids, client, clock.now(), clock.wall_ms())
        return Gate.answer(JSONResponse(answer), fault)

    return router


def _has_id(element: Any) -> bool:
    return isinstance(element, dict) and isinstance(element.get("externalJobPostingId"), str)
