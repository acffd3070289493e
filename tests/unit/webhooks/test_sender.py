"""One attempt over HTTP against a receiver on this machine: what each answer means, the
signature the receiver checks with `standardwebhooks`, and Retry-After."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import aiohttp
from aiohttp import web
from standardwebhooks import Webhook

from runtime.webhook_secrets import new_secret
from schemas.webhooks import WebhookEndpoint
from tests.unit.webhooks.fakes import endpoint, event, queued
from webhooks.lanes import Attempt, Verdict
from webhooks.sender import HttpSender, retry_after_s

SECRET = new_secret()
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def attempt(
    handler: Handler | None, timeout_s: float = 2.0
) -> tuple[Attempt, list[web.Request], list[bytes]]:
    """One attempt at a receiver answering with `handler` (None: nothing listens)."""
    seen: list[web.Request] = []
    bodies: list[bytes] = []

    async def receive(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        bodies.append(await request.read())
        assert handler is not None
        return await handler(request)

    async def run() -> Attempt:
        app = web.Application()
        app.router.add_post("/hooks", receive)
        runner = web.AppRunner(app)
        await runner.setup()
        port = _free_port()
        if handler is not None:
            await web.TCPSite(runner, "127.0.0.1", port).start()
        target = WebhookEndpoint("ep", "acme", f"http://127.0.0.1:{port}/hooks", ("*",), (), 0)
        try:
            async with aiohttp.ClientSession() as session:
                sender = HttpSender(session, lambda _e, _now: [SECRET], timeout_s)
                return await sender.send(target, queued("ep", event("p1", 2, 1_764_581_400_000), offset=0))
        finally:
            await runner.cleanup()

    return asyncio.run(run()), seen, bodies


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answer(status: int, headers: dict[str, str] | None = None) -> Handler:
    async def handler(_request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, headers=headers)

    return handler


def test_a_2xx_is_delivered_and_the_receiver_verifies_it():
    result, seen, bodies = attempt(answer(204))
    assert result == Attempt(Verdict.DELIVERED, "HTTP 204")
    [request] = seen
    assert request.headers["Content-Type"] == "application/json"
    body = Webhook(SECRET).verify(bodies[0], dict(request.headers))
    assert body["type"] == "listing.live" and body["data"]["version"] == 2
    assert request.headers["webhook-id"] == event("p1", 2, 1_764_581_400_000).event_id


def test_410_is_gone():
    assert attempt(answer(410))[0].verdict == Verdict.GONE


def test_a_5xx_or_429_is_retried_with_its_retry_after():
    assert attempt(answer(503))[0] == Attempt(Verdict.RETRY, "HTTP 503")
    assert attempt(answer(429, {"Retry-After": "120"}))[0] == Attempt(Verdict.RETRY, "HTTP 429", 120.0)


def test_a_redirect_is_not_followed_and_counts_as_a_failure():
    result, seen, _ = attempt(answer(302, {"Location": "http://127.0.0.1:1/elsewhere"}))
    assert (result.verdict, result.detail, len(seen)) == (Verdict.RETRY, "HTTP 302", 1)


def test_another_4xx_is_retried_too():
    assert attempt(answer(400))[0] == Attempt(Verdict.RETRY, "HTTP 400")


def test_no_answer_in_time_is_retried():
    async def hang(_request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.3)  # well past the sender's timeout
        return web.Response()

    result = attempt(hang, timeout_s=0.1)[0]
    assert (result.verdict, result.detail) == (Verdict.RETRY, "no answer within 0.1 s")


def test_no_connection_is_retried():
    result = attempt(None)[0]
    assert result.verdict == Verdict.RETRY and result.detail.startswith("ClientConnectorError")


def test_a_secret_that_cannot_be_opened_is_the_endpoints_failure_not_the_dispatchers():
    async def run() -> Attempt:
        def unreadable(_e: WebhookEndpoint, _now: int) -> list[str]:
            raise ValueError("no key of JOBPOST_WEBHOOK_SECRETS_KEY opens this secret")

        async with aiohttp.ClientSession() as session:
            return await HttpSender(session, unreadable, 1).send(
                endpoint("a"), queued("a", event("p", 0, 0), 0)
            )

    result = asyncio.run(run())
    assert result == Attempt(
        Verdict.RETRY, "cannot sign: no key of JOBPOST_WEBHOOK_SECRETS_KEY opens this secret"
    )


def test_retry_after_reads_seconds_and_http_dates():
    now = 1_764_581_400_000
    later = format_datetime(datetime.fromtimestamp(now / 1000 + 90, tz=UTC), usegmt=True)
    assert retry_after_s("30", now) == 30
    assert retry_after_s(later, now) == 90
    assert retry_after_s("soon", now) is None
    assert retry_after_s(None, now) is None
