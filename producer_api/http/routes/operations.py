"""/ops: the operations panel of the playground: dead letters and their redrive, consumer
lag, the sandbox boards' fault switches."""

from __future__ import annotations

from typing import Annotated

import httpx
from fastapi import APIRouter, Depends, Path, Request

from producer_api.http.deps import authenticate
from producer_api.http.models import ProblemOut
from producer_api.http.ops_models import Board, BoardsOut, FaultsIn, LagOut, LettersOut, RedriveIn, RedriveOut
from producer_api.http.problems import Problem, validation_problem
from producer_api.operations import Operations, SandboxMissing
from schemas.model import Destination

router = APIRouter(
    prefix="/ops",
    tags=["operations"],
    dependencies=[Depends(authenticate)],
    responses={401: {"model": ProblemOut, "description": "missing or unknown bearer token"}},
)
BoardName = Annotated[Board, Path(description="a job board")]


def _operations(request: Request) -> Operations:
    return request.app.state.operations  # type: ignore[no-any-return]


Ops = Annotated[Operations, Depends(_operations)]


@router.get("/dead-letters/{board}", response_model=LettersOut)
async def dead_letters(board: BoardName, ops: Ops) -> LettersOut:
    """The board's dead letters, newest first."""
    letters = await ops.dead_letters(Destination(board))
    return LettersOut.model_validate({"board": board, "letters": letters})


@router.post(
    "/dead-letters/{board}/redrive",
    response_model=RedriveOut,
    responses={422: {"model": ProblemOut, "description": "only one of partition and offset"}},
)
async def redrive(board: BoardName, body: RedriveIn, ops: Ops) -> RedriveOut:
    """Attempt one letter (`partition` and `offset`), or every unresolved one, once more, as
    `jobpost dlq redrive` does: a version delivered since is skipped; one that fails again
    is dead-lettered again."""
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
    results = await ops.redrive(Destination(board), body.partition, body.offset)
    return RedriveOut.model_validate({"results": results})


@router.get("/lag", response_model=LagOut)
async def lag(ops: Ops) -> LagOut:
    """How far each delivery group is behind jobpost.postings."""
    return LagOut.model_validate({"groups": await ops.lag()})


@router.get("/boards", response_model=BoardsOut)
async def boards(ops: Ops) -> BoardsOut:
    """The sandbox boards' fault settings, when `make run` runs the sandbox."""
    try:
        return BoardsOut.model_validate(await ops.boards())
    except httpx.HTTPError as exc:
        raise _sandbox_down(exc) from exc


@router.put(
    "/boards/{board}/faults",
    responses={404: {"model": ProblemOut, "description": "no sandbox runs with this API"}},
)
async def set_faults(board: BoardName, body: FaultsIn, ops: Ops) -> dict[str, object]:
    """Make the sandbox board fail: its mode and how often."""
    try:
        return await ops.set_faults(Destination(board), body.model_dump())
    except SandboxMissing as exc:
        raise Problem(404, "Not found", str(exc)) from exc
    except httpx.HTTPError as exc:
        raise _sandbox_down(exc) from exc


def _sandbox_down(exc: httpx.HTTPError) -> Problem:
    return Problem(502, "Bad gateway", f"the job-board sandbox did not answer: {type(exc).__name__}")
