"""A request's body, read whole before the app sees it: within its size limit (checked as it
arrives, before any of it is parsed) and within a deadline (a slow upload holds a slot of
the bound on requests in flight for no longer than that).

It runs behind the gate (`producer_api.http.gate`), so a body is read only for a request
that was admitted, or for a public route.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from producer_api.http.problems import Problem


class BodyReader:
    """413 for a body over the limit, whether Content-Length says so (nothing is read) or the
    stream does (reading stops there); 408 for one not received within `timeout_s`. The app
    is then given the body as one message."""

    def __init__(
        self, app: ASGIApp, max_bytes: int, timeout_s: float, per_path: dict[str, int] | None = None
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.per_path = per_path or {}  # routes with a limit of their own (a batch carries 100 postings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self.per_path.get(scope["path"], self.max_bytes)
        too_large = Problem(413, "Payload too large", f"the body is over {max_bytes} bytes")
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            await too_large.response()(scope, receive, send)
            return
        try:
            async with asyncio.timeout(self.timeout_s):
                body = await _read(receive, max_bytes)
        except TimeoutError:
            late = Problem(408, "Request timeout", f"the body was not received within {self.timeout_s:g} s")
            await late.response()(scope, receive, send)
            return
        if body is None:
            await too_large.response()(scope, receive, send)
            return
        if not isinstance(body, bytes):  # the client left: nobody to answer
            return
        await self.app(scope, _replay(body, receive), send)


async def _read(receive: Receive, max_bytes: int) -> bytes | Message | None:
    """The whole body; None once it is over `max_bytes`; the disconnect message if the client left."""
    chunks: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return message
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > max_bytes:
            return None
        if chunk:
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """The body as one message, then what the client sends (its disconnect)."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed
