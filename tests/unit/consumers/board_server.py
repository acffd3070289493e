"""A local aiohttp server that answers as a test says and keeps what it was sent: the board
side of the adapters' and the token source's unit tests (no Kafka, milliseconds)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from consumers.boards.base import JobAction, Operation
from schemas.model import Op, Posting, PostingUpdate
from tests import postings


@dataclass
class Seen:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Board:
    url: str
    client: aiohttp.ClientSession
    seen: list[Seen] = field(default_factory=list)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def board(handler: Handler) -> AsyncIterator[Board]:
    """Serve `handler` for every path; yield the base URL, a client, and what was seen."""
    seen: list[Seen] = []

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append(
            Seen(
                request.method,
                request.path,
                list(request.query.items()),
                dict(request.headers),
                await request.read(),
            )
        )
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as client:
        yield Board(str(server.make_url("")).rstrip("/"), client, seen)


def answering(*bodies: Any, status: int = 200, **headers: str) -> Handler:
    """Answer each call with the next body (the last one again once they run out)."""
    left = list(bodies)

    async def handler(_request: web.Request) -> web.Response:
        body = left.pop(0) if len(left) > 1 else left[0]
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        return web.Response(status=status, body=raw, content_type="application/json", headers=headers)

    return handler


def update(
    posting_id: str = "p1",
    version: int = 1,
    op: Op = Op.UPDATED,
    employer: str = "default",
    posting: Posting | None = None,
) -> PostingUpdate:
    return PostingUpdate(
        posting_id=posting_id,
        version=version,
        op=op,
        idempotency_key=f"{posting_id}:{version}",
        request_id="r1",
        posting=posting or postings.posting(0),
        last_update_time_millis=1_700_000_000_000,
        accepted_at=1_700_000_000_001,
        employer=employer,
    )


def action(
    given: PostingUpdate,
    operation: Operation | None = None,
    job_id: str | None = None,
    listed_at: int | None = None,
) -> JobAction:
    """What a lane asks of the board for `given`: by default a CLOSE for a delete, a CREATE
    for version 0, an UPDATE after (as a lane does while the board holds what it sent)."""
    if operation is None:
        operation = (
            Operation.CLOSE
            if given.op == Op.DELETED
            else Operation.CREATE
            if given.version == 0
            else Operation.UPDATE
        )
    return JobAction(operation, given.posting_id, given.employer, given, job_id, listed_at)


def run(coroutine: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coroutine

    return asyncio.run(main())
