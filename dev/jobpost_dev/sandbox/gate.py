"""What every call to a board's API meets before the board looks at its content, in the
order a real board answers: the token, the budgets (a day's, then the minute's), then the
fault a test switched on. And the `outage` fault, which meets a call before anything else."""

from __future__ import annotations

import asyncio
import math
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from jobpost_dev.sandbox.clock import Clock
from jobpost_dev.sandbox.faults import LostResponse, malformed
from jobpost_dev.sandbox.limits import JOBS
from jobpost_dev.sandbox.state import BoardState
from jobpost_dev.sandbox.tokens import TokenCheck, bearer

TOKEN_PATHS = ("/oauth/v2/accessToken", "/oauth/v2/tokens")
Refusal = Callable[[int, str, dict[str, str] | None], Response]


@dataclass
class Gate:
    board: BoardState
    clock: Clock
    unauthorized: Callable[[TokenCheck], Response]
    refused: Refusal  # the board's body for a call refused as a whole

    def authorize(self, request: Request) -> Response | str:
        """The client the bearer token was issued to, when it is one this board issued and
        still valid; else the board's refusal."""
        self.board.stats.calls += 1
        token = bearer(request.headers.get("authorization")) or ""
        check = self.board.tokens.check(token, self.clock.now(), self.board.limits.token_ttl_s)
        if check is TokenCheck.VALID:
            return self.board.tokens.client(token)
        self.board.stats.expired_token_calls += 1
        return self.unauthorized(check)

    async def admit(self, size: int, posting_ids: list[str], kind: str = JOBS) -> Response | str:
        """A refusal of the whole call (429, or a fault), else the fault left to apply around
        the content: `none` or `lose_response`. The budget counts the call before any fault,
        as the call did reach the board. `kind` names the daily cap it counts against
        (LinkedIn's; Indeed has none)."""
        for posting_id in posting_ids:  # the board saw them, whatever it answers
            self.board.posting(posting_id).requests += 1
        faults = self.board.faults
        if faults.latency_ms:
            await asyncio.sleep(faults.latency_ms / 1000)
        if (throttled := self._budget(size, kind)) is not None:
            self.board.stats.throttled += 1
            return throttled
        fault = faults.call_fault(posting_ids)
        if fault == "error":
            return self.refused(503, "sandbox: unavailable", None)
        if fault == "timeout":
            await asyncio.sleep(3600)
        if fault == "rate_limit":
            self.board.stats.throttled += 1
            return self.refused(429, "sandbox: slow down", {"Retry-After": str(faults.retry_after_s)})
        if fault == "reject":
            return self.refused(400, "sandbox: rejected", None)
        if fault == "malformed":
            return malformed()
        return fault

    def _budget(self, size: int, kind: str) -> Response | None:
        """The 429 of a call beyond a daily cap or the minute's budget, else None (and the
        call counted)."""
        board, now, limits = self.board, self.clock.now(), self.board.limits
        board.today.roll(self.clock.day())
        passed = board.today.over(kind, size, limits)
        if passed is not None:
            if limits.records_per_day is not None and kind == JOBS and size > limits.records_per_day:
                return self.refused(429, f"a call of {size} records can never fit {passed}", None)
            retry_after = str(self.clock.until_next_day_s())
            return self.refused(
                429, f"over {passed}: retry after {retry_after} s (00:00 UTC)", {"Retry-After": retry_after}
            )
        wait = board.window.wait_s(now, size, limits)
        if wait is None:
            per_minute = limits.records_per_minute
            return self.refused(
                429, f"a call of {size} records can never fit {per_minute} records a minute", None
            )
        if wait > 0:
            retry_after = str(math.ceil(wait))
            return self.refused(
                429, f"over the budget: retry after {retry_after} s", {"Retry-After": retry_after}
            )
        board.admitted(now, size)
        board.today.count(kind, size)
        return None

    @staticmethod
    def answer(response: Response, fault: str) -> Response:
        """The answer to a call that was applied: lost on the way when the fault says so."""
        return LostResponse() if fault == "lose_response" else response


class Outages:
    """ASGI wrapper around the sandbox: a call to a board in `outage` (its token endpoint
    included) loses its connection before any answer, reset as a board whose load balancer
    drops it would (both boards share one port, so a per-board refusal is not possible)."""

    def __init__(self, app: ASGIApp, boards: dict[str, BoardState]) -> None:
        self.app = app
        self.boards = boards

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            board = self.boards.get(str(scope["path"]).split("/")[1])
            if board is not None and board.faults.outage():
                if not str(scope["path"]).endswith(TOKEN_PATHS):
                    board.stats.calls += 1
                if await _reset(send):
                    return
                raise ConnectionResetError("sandbox: outage")  # a server without a transport to reset
        await self.app(scope, receive, send)


async def _reset(send: Send) -> bool:
    """Reset the connection under this request, with nothing sent: uvicorn's `send` is a
    method of the request's cycle, which holds the transport."""
    cycle: Any = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is None:
        return False
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST, not FIN
    transport.abort()
    for _ in range(100):  # until uvicorn has seen the connection go, so it answers nothing
        if getattr(cycle, "disconnected", True):
            break
        await asyncio.sleep(0)
    return True
