"""/ops: the operations panel of the playground: dead letters and their redrive, consumer
lag, the sandbox boards' fault switches."""

from __future__ import annotations

from typing import Annotated

import httpx
from fastapi import APIRouter, Depends, Path, Request

from producer_api.audit import Audit
from producer_api.callers import Scope
from producer_api.http.deps import Operator
from producer_api.http.gate import Requires
from producer_api.http.models import ProblemOut
from producer_api.http.ops_models import Board, BoardsOut, FaultsIn, LagOut, LettersOut, RedriveIn, RedriveOut
from producer_api.http.problems import Problem, validation_problem
from producer_api.operations import Operations, SandboxMissing
from schemas.audit import AuditAction
from schemas.model import Destination

router = APIRouter(
    prefix="/ops",
    tags=["operations"],
    dependencies=[Depends(Requires(Scope.OPS))],
    responses={
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope `ops`"},
        429: {"model": ProblemOut, "description": "the credential is over its request rate (Retry-After)"},
    },
)
BoardName = Annotated[Board, Path(description="a job board")]


def _operations(request: Request) -> Operations:
    return request.app.state.operations  # type: ignore[no-any-return]


def _audit(request: Request) -> Audit:
    return request.app.state.audit  # type: ignore[no-any-return]


Ops = Annotated[Operations, Depends(_operations)]
Audited = Annotated[Audit, Depends(_audit)]


@router.get("/dead-letters/{board}", response_model=LettersOut)
async def dead_letters(board: BoardName, ops: Ops) -> LettersOut:
    """The board's dead letters, newest first."""
    letters = await ops.dead_letters(Destination(board))
    return LettersOut.model_validate({"board": board, "letters": letters}, from_attributes=True)


@router.post(
    "/dead-letters/{board}/redrive",
    response_model=RedriveOut,
    status_code=202,
    responses={422: {"model": ProblemOut, "description": "only one of partition and offset"}},
)
async def redrive(
    board: BoardName, body: RedriveIn, ops: Ops, caller: Operator, audit: Audited
) -> RedriveOut:
    """Ask the board's consumer to attempt one letter (`partition` and `offset`), or every
    unresolved one, once more, as `jobpost dlq redrive` does. Answers 202 with the requests
    written: the consumer handles each in its posting's lane, in order with the posting's
    other versions (a version delivered since, or older than one the lane finished, is
    skipped), and its outcome appears as a delivery event carrying the `request_id` in
    `GET /postings/{id}/timeline`."""
    if (body.partition is None) != (body.offset is None):
        raise validation_problem(
            [
                {
                    "loc": ["body", "offset"],
                    "msg": "give both partition and offset, or neither",
                    "type": "missing",
                }
            ]
        )
    requests = await ops.redrive(Destination(board), body.partition, body.offset, caller.name)
    for request in requests:
        detail = f"{board} requested {request.request_id}"
        audit.record(
            caller, AuditAction.REDRIVE, posting_id=request.posting_id, version=request.version, detail=detail
        )
    return RedriveOut.model_validate({"requests": requests}, from_attributes=True)


@router.get("/lag", response_model=LagOut)
async def lag(ops: Ops) -> LagOut:
    """How far each delivery group is behind jobpost.postings."""
    return LagOut.model_validate({"groups": await ops.lag()}, from_attributes=True)


@router.get("/boards", response_model=BoardsOut)
async def boards(ops: Ops) -> BoardsOut:
    """Each board's budgets (per minute: records, requests; per day: the caps and their
    reset), what its consumers used of them this minute and today, its circuit, a pause, the
    oldest unconfirmed task, per member with the time of its last status (a member silent for
    three of its intervals is marked stale, never dropped); and the sandbox boards' fault
    settings, when `make run` runs the sandbox."""
    try:
        return BoardsOut.model_validate(await ops.boards(), from_attributes=True)
    except httpx.HTTPError as exc:
        raise _sandbox_down(exc) from exc


@router.put(
    "/boards/{board}/faults",
    responses={404: {"model": ProblemOut, "description": "no sandbox runs with this API"}},
)
async def set_faults(
    board: BoardName, body: FaultsIn, ops: Ops, caller: Operator, audit: Audited
) -> dict[str, object]:
    """Make the sandbox board fail: its mode and how often."""
    try:
        answer = await ops.set_faults(Destination(board), body.model_dump())
        audit.record(caller, AuditAction.FAULTS, detail=f"{board} {body.mode} p={body.probability}")
        return answer
    except SandboxMissing as exc:
        raise Problem(404, "Not found", str(exc)) from exc
    except httpx.HTTPError as exc:
        raise _sandbox_down(exc) from exc


def _sandbox_down(exc: httpx.HTTPError) -> Problem:
    return Problem(502, "Bad gateway", f"the job-board sandbox did not answer: {type(exc).__name__}")
