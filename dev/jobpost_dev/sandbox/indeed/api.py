"""Indeed's Job Sync API as the sandbox serves it: GraphQL over `POST /indeed/graphql` ("GET
is not supported"), its input passed as `variables` (createSourcedJobPostings; an HTML
description inlined in the query is what GRAPHQL_PARSE_FAILED usually means: the support
error reference). The route only translates; `board` and `rules` decide.

- `mutation { jobsIngest { createSourcedJobPostings(input: $input) … } }`, `input:
  {jobPostings: [{body, metadata}]}` (at most 100: the FAQ), answering per job
  `results[i].jobPosting.sourcedPostingId`, or `jobPosting: null` and an error whose `path`
  ends at the job's index ("If a job is not accepted, the corresponding
  CreateSourcedJobPostingResult has a null jobPosting, with an error in the standard GraphQL
  errors object");
- `mutation { jobsIngest { expireSourcedJobsBySourcedPostingId(input: $input) … } }`, `input:
  {jobs: [{sourcedPostingId}]}` (the shape public clients use; Indeed's pages do not show
  it), answering `results[i].trackingKey`;
- `query { node(id: $id) { … } }` and `nodes(ids: $ids)` ("Get job posting status by ID",
  "List job postings by IDs": the Job Sync guide), the id being a `sourcedPostingId`.

Errors are HTTP 200 with `errors[].extensions.code` ("HTTP status codes - Only for rate
limiting (HTTP 429) and network-level failures": troubleshoot-errors); a missing, invalid
or expired token is `FORBIDDEN` "Client is not authorized." on HTTP 200 (troubleshoot-errors,
the error reference).
"""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from jobpost_dev.sandbox.clock import Clock
from jobpost_dev.sandbox.gate import Gate
from jobpost_dev.sandbox.indeed.board import EXPIRE, UPSERT, IndeedBoard
from jobpost_dev.sandbox.tokens import TokenCheck

NODE = re.compile(r"\bnode\s*\(\s*id\s*:\s*(\$\w+|\"[^\"]*\")")
NODES = re.compile(r"\bnodes\s*\(\s*ids\s*:\s*(\$\w+|\[[^\]]*\])")


def error(code: str, message: str, path: list[Any] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "message": message,
        "extensions": {"code": code, "classification": "ValidationError"},
    }
    if path is not None:
        found["path"] = path
    return found


def whole_call(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """Indeed's answer to a call refused as a whole: GraphQL errors, no data."""
    return JSONResponse({"data": None, "errors": [error(code, message)]}, status, headers)


def unauthorized(_check: TokenCheck) -> JSONResponse:
    return whole_call(200, "FORBIDDEN", "Client is not authorized.")


def refused(status: int, message: str, headers: dict[str, str] | None) -> Response:
    code = {429: "TOO_MANY_REQUESTS", 503: "INTERNAL_SERVER_ERROR"}.get(status, "BAD_USER_INPUT")
    return whole_call(status, code, message, headers)


def routes(board: IndeedBoard, clock: Clock, read_json: Any) -> APIRouter:
    gate = Gate(board, clock, unauthorized, refused)
    router = APIRouter(prefix="/indeed")

    @router.post("/graphql")
    async def graphql(request: Request) -> Response:
        client = gate.authorize(request)
        if isinstance(client, Response):
            return client
        body = await read_json(request)
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str):
            return whole_call(200, "GRAPHQL_PARSE_FAILED", "a GraphQL request {query, variables} expected")
        variables = body.get("variables") if isinstance(body.get("variables"), dict) else {}
        found = [m for m in (UPSERT, EXPIRE) if m in query]
        if not found and (NODE.search(query) or NODES.search(query)):
            return await status(query, variables, client)
        if len(found) != 1:
            return whole_call(
                200, "GRAPHQL_VALIDATION_FAILED", "one jobsIngest mutation, or node(s), expected"
            )
        return await mutate(found[0], variables.get("input"), client)

    async def mutate(mutation: str, given: Any, client: str) -> Response:
        items = (
            given.get("jobPostings" if mutation == UPSERT else "jobs") if isinstance(given, dict) else None
        )
        if not isinstance(items, list) or not items:
            return whole_call(200, "BAD_USER_INPUT", "Variable 'input' has an invalid value")
        if (most := board.limits.batch_max) is not None and len(items) > most:
            return whole_call(200, "BAD_USER_INPUT", f"{len(items)} jobs in one call: at most {most}")
        carried = [_posting_id(board, mutation, item) for item in items]
        fault = await gate.admit(len(items), list(dict.fromkeys(p for p in carried if p is not None)))
        if isinstance(fault, Response):
            return fault
        now_ms = clock.wall_ms()
        outcomes = (board.upsert if mutation == UPSERT else board.expire)(items, client, now_ms)
        errors = [
            error(code, message, ["jobsIngest", mutation, "results", index])
            for index, (_, found) in enumerate(outcomes)
            for code, message in found
        ]
        answer: dict[str, Any] = {"data": {"jobsIngest": {mutation: {"results": [r for r, _ in outcomes]}}}}
        if errors:
            answer["errors"] = errors
        return Gate.answer(JSONResponse(answer), fault)

    async def status(query: str, variables: dict[str, Any], client: str) -> Response:
        fault = await gate.admit(0, [])
        if isinstance(fault, Response):
            return fault
        now_ms = clock.wall_ms()
        if (one := NODE.search(query)) is not None:
            data: dict[str, Any] = {"node": board.node(_value(one.group(1), variables), client, now_ms)}
        else:
            many = NODES.search(query)
            ids = _value(many.group(1), variables) if many is not None else None
            if not isinstance(ids, list):
                return whole_call(200, "BAD_USER_INPUT", "nodes(ids:) takes a list of ids")
            data = {"nodes": [board.node(i, client, now_ms) for i in ids]}
        return Gate.answer(JSONResponse({"data": data}), fault)

    return router


def _value(written: str, variables: dict[str, Any]) -> Any:
    """A GraphQL argument: a `$variable`, a string, or a list of strings."""
    if written.startswith("$"):
        return variables.get(written[1:])
    if written.startswith("["):
        return re.findall(r"\"([^\"]*)\"", written)
    return written.strip('"')


def _posting_id(board: IndeedBoard, mutation: str, item: Any) -> str | None:
    """The posting a job is about: the id of an upsert, the owner of an expire's id."""
    if mutation == EXPIRE:
        return board.owner(item.get("sourcedPostingId") if isinstance(item, dict) else None)
    metadata = item.get("metadata") if isinstance(item, dict) else None
    job_id = metadata.get("jobPostingId") if isinstance(metadata, dict) else None
    return job_id if isinstance(job_id, str) and job_id else None
