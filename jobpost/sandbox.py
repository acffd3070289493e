"""The job-board sandbox: one HTTP server imitating LinkedIn's and Indeed's posting APIs.

It deduplicates by Idempotency-Key (a repeat is answered from the stored result and
counted in `duplicates`, never applied again) and injects faults on demand. Its control
surface is CONTRACT.md's "Job-board sandbox".
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

Board = Literal["linkedin", "indeed"]


Mode = Literal["none", "error", "timeout", "rate_limit", "reject", "lose_response", "malformed"]


class FaultRule(BaseModel):
    mode: Mode
    probability: float = Field(default=1.0, ge=0, le=1)


class Faults(BaseModel):
    mode: Mode = "none"
    probability: float = Field(default=1.0, ge=0, le=1)
    latency_ms: int = Field(default=0, ge=0)
    retry_after_s: int = Field(default=1, ge=0)
    posting_ids: list[str] | None = Field(default=None, description="only these postings (default: all)")
    also: list[FaultRule] = Field(
        default_factory=list, description="more faults at once, each with its own probability"
    )

    def draw(self) -> str:
        """The fault this request meets: the first rule whose chance comes up, else none."""
        for rule in (FaultRule(mode=self.mode, probability=self.probability), *self.also):
            if rule.mode != "none" and random.random() < rule.probability:
                return rule.mode
        return "none"


@dataclass
class SandboxPosting:
    versions: list[int] = field(default_factory=list)
    applied_at_ms: list[int] = field(default_factory=list)
    status: Literal["open", "closed"] = "open"
    requests: int = 0
    duplicates: int = 0


@dataclass
class BoardState:
    faults: Faults = field(default_factory=Faults)
    postings: dict[str, SandboxPosting] = field(default_factory=dict)
    answered: dict[str, tuple[int, Any]] = field(default_factory=dict)


# What a misbehaving board or a proxy in front of it answers with a 200: an HTML page,
# truncated JSON, text in another charset, JSON of another shape. Nothing is applied.
MALFORMED_ANSWERS = (
    (b"<html><body><h1>Service temporarily unavailable</h1></body></html>", "text/html"),
    (b'{"elements": [{"status": 2', "application/json"),
    ('{"message": "\u00e9t\u00e9 r\u00e9ussi"}'.encode("latin-1"), "application/json"),
    (b'{"unexpected": ["shape"]}', "application/json"),
    (b"[]", "application/json"),
)


class _LostResponse(Response):
    """Starts a response, then drops the connection before the body: the request was
    applied but the client never learns it."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1000")]})
        raise ConnectionAbortedError("sandbox: response lost on purpose")


def create_sandbox() -> FastAPI:
    app = FastAPI(title="jobpost job-board sandbox")
    boards: dict[str, BoardState] = {"linkedin": BoardState(), "indeed": BoardState()}

    async def handle(board: str, request: Request, apply: Any) -> Response:
        state = boards[board]
        key = request.headers.get("Idempotency-Key", "")
        posting_id, _, version = key.rpartition(":")
        if not posting_id or not version.isdigit():
            return JSONResponse({"message": "Idempotency-Key must be {posting_id}:{version}"}, 400)
        posting = state.postings.setdefault(posting_id, SandboxPosting())
        posting.requests += 1
        faults = state.faults
        if faults.latency_ms:
            await asyncio.sleep(faults.latency_ms / 1000)
        targeted = faults.posting_ids is None or posting_id in faults.posting_ids
        fault = faults.draw() if targeted else "none"
        if fault == "error":
            return JSONResponse({"message": "sandbox: unavailable"}, 503)
        if fault == "timeout":
            await asyncio.sleep(3600)
        if fault == "rate_limit":
            return JSONResponse(
                {"message": "sandbox: slow down"}, 429, {"Retry-After": str(faults.retry_after_s)}
            )
        if fault == "malformed":
            content, media_type = random.choice(MALFORMED_ANSWERS)
            return Response(content, 200, media_type=media_type)
        if fault == "reject" and key not in state.answered:
            # A content decision, made when applying: a repeat of an accepted request is
            # still answered from its idempotency record, as a real board would.
            return JSONResponse({"message": "sandbox: rejected"}, 400)
        if key in state.answered:
            posting.duplicates += 1
            status, body = state.answered[key]
        else:
            status, body = 200, apply(posting, int(version), await request.json())
            state.answered[key] = (status, body)
            if len(posting.applied_at_ms) < len(posting.versions):
                posting.applied_at_ms.append(time.time_ns() // 1_000_000)
        if fault == "lose_response":
            return _LostResponse()
        return JSONResponse(body, status)

    def apply_linkedin(posting: SandboxPosting, version: int, body: dict[str, Any]) -> dict[str, Any]:
        (element,) = body["elements"]
        if element["jobPostingOperationType"] == "CLOSE":
            if posting.status == "closed":
                return {"elements": [{"status": 409, "error": "already closed"}]}
            posting.status = "closed"
        else:
            posting.status = "open"
        posting.versions.append(version)
        return {"elements": [{"status": 202, "id": element["externalJobPostingId"]}]}

    def apply_indeed(posting: SandboxPosting, version: int, body: dict[str, Any]) -> dict[str, Any]:
        expire = "expireSourcedJobsBySourcedPostingId" in body["query"]
        posting.status = "closed" if expire else "open"
        posting.versions.append(version)
        field_name = "expireSourcedJobsBySourcedPostingId" if expire else "createSourcedJobPostings"
        return {"data": {"jobsIngest": {field_name: {"results": [{"ok": True}]}}}}

    @app.post("/linkedin/rest/simpleJobPostings")
    async def linkedin(request: Request) -> Response:
        if request.headers.get("x-restli-method") != "batch_create":
            return JSONResponse({"message": "x-restli-method: batch_create expected"}, 400)
        return await handle("linkedin", request, apply_linkedin)

    @app.post("/indeed/graphql")
    async def indeed(request: Request) -> Response:
        return await handle("indeed", request, apply_indeed)

    @app.get("/_sandbox/{board}/faults")
    async def get_faults(board: Board) -> Faults:
        return boards[board].faults

    @app.put("/_sandbox/{board}/faults")
    async def set_faults(board: Board, faults: Faults) -> Faults:
        boards[board].faults = faults
        return faults

    @app.get("/_sandbox/{board}/postings/{posting_id}")
    async def inspect(board: Board, posting_id: str) -> dict[str, Any]:
        posting = boards[board].postings.get(posting_id)
        if posting is None or not posting.requests:
            raise HTTPException(404, "the board never saw this posting")
        return {
            "versions": posting.versions,
            "applied_at_ms": posting.applied_at_ms,
            "status": posting.status,
            "requests": posting.requests,
            "duplicates": posting.duplicates,
        }

    @app.delete("/_sandbox")
    async def reset() -> dict[str, str]:
        for board in boards:
            boards[board] = BoardState()
        return {"status": "reset"}

    return app
