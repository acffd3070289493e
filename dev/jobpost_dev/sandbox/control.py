"""The sandbox's control surface (`/_sandbox`, CONTRACT.md's "Job-board sandbox"): what a test
switches on (faults, limits, the clock, a board's own closes) and what it reads back (what
each board saw and applied, the jobs it holds, its counters)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import BaseModel, ConfigDict, Field

from jobpost_dev.sandbox import indeed, linkedin
from jobpost_dev.sandbox.clock import Clock
from jobpost_dev.sandbox.faults import Faults
from jobpost_dev.sandbox.indeed.board import IndeedBoard
from jobpost_dev.sandbox.limits import Limits, limits_for
from jobpost_dev.sandbox.linkedin.board import LinkedInBoard
from jobpost_dev.sandbox.state import BoardState

Board = Literal["linkedin", "indeed"]  # schemas.topics.BOARDS, as FastAPI checks a path (a unit test agrees)


class Close(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        min_length=1, max_length=200, description="the board's, e.g. LinkedIn's MEMBER_REPORTED"
    )


class Advance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    advance_s: float = Field(ge=0, description="seconds to move the sandbox's clock forward")


def routes(li: LinkedInBoard, ind: IndeedBoard, clock: Clock) -> APIRouter:
    boards: dict[str, BoardState] = {"linkedin": li, "indeed": ind}
    router = APIRouter(prefix="/_sandbox")

    def settled() -> int:
        """Bring both boards to the clock's time (tasks ended, jobs indexed); the time."""
        li.settle(clock.now())
        ind.settle(clock.wall_ms())
        return clock.wall_ms()

    def jobs_of(board: str, posting_id: str | None) -> list[Any]:
        return li.jobs_of(posting_id) if board == "linkedin" else ind.jobs_of(posting_id)

    @router.get("/{board}/faults")
    async def get_faults(board: Board) -> Faults:
        return boards[board].faults

    @router.put("/{board}/faults")
    async def set_faults(board: Board, faults: Faults) -> Faults:
        boards[board].faults = faults
        return faults

    @router.get("/{board}/limits")
    async def get_limits(board: Board) -> Limits:
        return boards[board].limits

    @router.put("/{board}/limits")
    async def set_limits(board: Board, asked: Limits) -> Limits:
        try:
            boards[board].limits = limits_for(board, asked)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        return boards[board].limits

    @router.get("/{board}/stats")
    async def stats(board: Board) -> dict[str, Any]:
        settled()
        state = boards[board]
        found: dict[str, Any] = state.stats.to_json()
        if board == "linkedin":
            state.today.roll(clock.day())
            found["today"] = state.today.to_json()
        return found

    @router.get("/{board}/postings/{posting_id}")
    async def posting(board: Board, posting_id: str) -> dict[str, Any]:
        now_ms = settled()
        state = boards[board]
        seen = state.postings.get(posting_id)
        if seen is None or not (seen.requests or seen.log):
            raise HTTPException(404, "the board never saw this posting")
        status = (
            li.posting_status(posting_id, now_ms)
            if board == "linkedin"
            else ind.posting_status(posting_id, now_ms)
        )
        return seen.to_json(status)

    @router.get("/{board}/jobs")
    async def jobs(board: Board, posting_id: str | None = None) -> dict[str, Any]:
        now_ms = settled()
        return {"jobs": [job.to_json(now_ms) for job in jobs_of(board, posting_id)]}

    @router.put("/{board}/jobs/{job_id}/close")
    async def close(board: Board, job_id: str, asked: Close) -> dict[str, Any]:
        now_ms = settled()
        try:
            if board == "linkedin":
                return li.close_by_board(job_id, asked.reason, now_ms).to_json(now_ms)
            return ind.close_by_board(job_id, asked.reason, now_ms).to_json(now_ms)
        except (linkedin.board.JobNotFound, indeed.board.JobNotFound) as exc:
            raise HTTPException(404, str(exc)) from exc
        except (linkedin.board.JobClosed, indeed.board.JobClosed) as exc:
            raise HTTPException(409, str(exc)) from exc

    @router.get("/clock")
    async def get_clock() -> dict[str, Any]:
        return clock.to_json()

    @router.put("/clock")
    async def advance(asked: Advance) -> dict[str, Any]:
        clock.advance(asked.advance_s)
        settled()
        return clock.to_json()

    @router.delete("")
    async def reset() -> dict[str, str]:
        clock.reset()
        for state in boards.values():
            state.reset()
            state.tokens.rebase(clock.now())
        return {"status": "reset"}

    return router
