"""The FastAPI application: its routes and layers; the parts it serves from are built by
`producer_api.bootstrap` and only started and stopped by the lifespan."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import PlainTextResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import CONTENT_TYPE_LATEST, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from producer_api.bootstrap import bootstrap, copy_from_peers
from producer_api.commands import OutcomeUnknown
from producer_api.config import ApiSettings
from producer_api.http import answers, docs, problems
from producer_api.http.bodies import BodyReader
from producer_api.http.gate import Gate
from producer_api.http.headers import SecurityHeaders
from producer_api.http.identity import Identity
from producer_api.http.limits import ConcurrencyLimit
from producer_api.http.ports import PortSplit
from producer_api.http.routes import batch, health, operations, postings, snapshot, validation, webhooks
from producer_api.service import PostingError, Unavailable
from runtime import write_stages
from sequencer.config import SequencerSettings

log = logging.getLogger(__name__)
_UI = Path(__file__).parent.parent / "ui"  # the playground's static files

REQUEST_SECONDS = Histogram(
    "jobpost_api_request_seconds",
    "HTTP request latency by route, method and status",
    ["method", "route", "status"],
    buckets=(0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10),
)


def create_app(
    settings: ApiSettings,
    sequencer_settings: SequencerSettings | None = None,
    identity: Identity | None = None,
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.to_thread(copy_from_peers, settings)
        parts = bootstrap(settings, sequencer_settings, identity)
        parts.start()
        state = app.state
        state.settings, state.identity, state.audit = settings, parts.identity, parts.audit
        state.service, state.operations = parts.service, parts.operations
        state.readiness, state.webhooks = parts.readiness, parts.webhooks
        try:
            yield
        finally:
            await parts.stop()

    app = FastAPI(
        title="jobpost",
        version="0.1.0",
        description="Job postings, versioned by one writer per posting and delivered in order "
        "to LinkedIn, Indeed and search.",
        lifespan=lifespan,
        # Served from the package by producer_api.http.docs (no CDN), or not at all.
        docs_url=None,
        redoc_url=None,
        openapi_url="/openapi.json" if settings.docs else None,
    )
    problems.install(app)
    problems.document(app)

    @app.exception_handler(PostingError)
    @app.exception_handler(Unavailable)
    @app.exception_handler(OutcomeUnknown)
    async def _refused(_request: Request, exc: PostingError | Unavailable | OutcomeUnknown) -> Response:
        return answers.problem_for(exc).response()

    # Outermost last: the port, the bound on requests in flight, the gate (who asks, before
    # any body is read), then the body (within its limit and deadline), then FastAPI.
    app.add_middleware(
        BodyReader,
        max_bytes=settings.max_body_bytes,
        timeout_s=settings.body_read_timeout_s,
        per_path={batch.PATH: settings.max_batch_body_bytes},
    )
    app.add_middleware(Gate, routes=app.router.routes)
    app.add_middleware(ConcurrencyLimit, limit=settings.max_concurrent_requests)
    if settings.internal_port is not None:
        app.add_middleware(PortSplit, internal_port=settings.internal_port)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(RequestTimer)
    app.include_router(health.router)
    app.include_router(postings.router)
    app.include_router(batch.router)
    app.include_router(validation.router)
    app.include_router(operations.router)
    if settings.internal_port is not None:  # every employer's postings: on the internal port only
        app.include_router(snapshot.router)
    app.include_router(webhooks.router)
    app.mount("/ui", StaticFiles(directory=_UI, html=True, check_dir=False), name="ui")
    if settings.docs:
        docs.install(app)

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def metrics(request: Request) -> PlainTextResponse:
        readiness = getattr(request.app.state, "readiness", None)  # None: not started yet
        if readiness is not None:
            await readiness.check()  # jobpost_api_ready as of this scrape
        return PlainTextResponse(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    return app


class RequestTimer:
    """Observes every HTTP request's latency by route template (pure ASGI: no body copying)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        timing = write_stages.open_request()
        started = timing.started
        status = "500"

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = str(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            finished = time.perf_counter()
            REQUEST_SECONDS.labels(scope["method"], route, status).observe(finished - started)
            if timing.resumed is not None:  # a write that was sequenced
                write_stages.observe("respond", finished - timing.resumed)
                write_stages.observe("request", finished - started)
