"""The one gate: every route declares its scope and the gate checks it before any body is
read. The route walk below is what keeps the next route from forgetting; the rest drives
the real app (its lifespan never runs: nothing connects) as ASGI, counting what is read."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY

from producer_api.callers import WRITING, Scope
from producer_api.config import ApiSettings
from producer_api.http.app import create_app
from producer_api.http.deps import Reader
from producer_api.http.gate import every_route, required
from producer_api.http.identity import Identity
from tests.unit.producer_api.test_batch import TOKEN, client

# What anyone may ask: the probes, the metrics, the documentation, the playground's files.
PUBLIC = {
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
    "/docs",
    "/redoc",
    "/docs/assets/redoc.standalone.js",
    "/docs/assets",
    "/docs/page",
    "/ui",
}
PUBLIC_WRITES: set[tuple[str, str]] = set()  # (method, path) a public route may write with: none
_WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
OPERATIONS = {Scope.OPS, Scope.SNAPSHOT}  # `ops`, or the narrower scope of the one snapshot route


def unguarded(app: FastAPI) -> list[str]:
    """Every route that lacks the scope it should declare, said as a sentence each."""
    found = []
    for route in every_route(app.router.routes):
        needs, path, methods = required(route), route.path, set(route.methods or ())
        writes = methods & _WRITE_METHODS
        if path in PUBLIC:
            found += [f"{m} {path} is public and writes" for m in writes if (m, path) not in PUBLIC_WRITES]
            continue
        if not needs:
            found.append(f"{sorted(methods)} {path} declares no scope")
        elif writes and not needs & WRITING:
            found.append(f"{sorted(writes)} {path} writes with {sorted(needs)}, none of them a write scope")
        if path.startswith("/ops") and not needs & OPERATIONS:
            found.append(f"{sorted(methods)} {path} is an operator's route without the scope ops")
    return found


def full_app() -> FastAPI:
    """Every route the API can serve (the snapshot is there only with an internal port)."""
    return create_app(ApiSettings(tokens="t", internal_port=9000))


def test_every_route_declares_its_scope_and_every_route_that_writes_a_write_scope():
    app = full_app()
    routes = [route.path for route in every_route(app.router.routes)]
    assert "/postings:batch" in routes and "/ops/snapshot" in routes  # the walk sees included routers
    assert unguarded(app) == []


def test_the_walk_finds_a_route_that_forgot():
    app = full_app()

    @app.post("/postings/{posting_id}/forgotten")
    async def forgotten(posting_id: str) -> dict[str, str]:
        return {}

    @app.delete("/postings/{posting_id}/read-scoped")
    async def read_scoped(posting_id: str, caller: Reader) -> dict[str, str]:
        return {}

    @app.get("/ops/peek")
    async def peek(caller: Reader) -> dict[str, str]:
        return {}

    assert unguarded(app) == [
        "['POST'] /postings/{posting_id}/forgotten declares no scope",
        "['DELETE'] /postings/{posting_id}/read-scoped writes with [<Scope.READ: 'postings:read'>], "
        "none of them a write scope",
        "['GET'] /ops/peek is an operator's route without the scope ops",
    ]


# Driving the app as the server would: the body arrives in 64 KiB chunks, read or not.
Receive = Callable[[], Awaitable[dict[str, Any]]]
CREDENTIALS = {"reader": ["postings:read"], "nobody": [], "writer": ["postings:read", "postings:write"]}


def app_with_credentials(tmp_path, **settings: Any) -> FastAPI:
    path = tmp_path / "credentials.json"
    entries = [
        {
            "name": name,
            "token_sha256": hashlib.sha256(f"{name}-token".encode()).hexdigest(),
            "employer": "acme",
            "scopes": scopes,
        }
        for name, scopes in CREDENTIALS.items()
    ]
    path.write_text(json.dumps({"credentials": entries}))
    app_settings = ApiSettings(tokens="dev", credentials_file=path, **settings)
    app = create_app(app_settings)
    app.state.settings = app_settings
    app.state.identity = Identity.of(app_settings)
    return app


class Upload:
    """A request's body as chunks, and how much of it the app asked for."""

    def __init__(self, body: bytes, chunk: int = 64 * 1024, stall_after: int | None = None) -> None:
        self.body, self.chunk, self.stall_after = body, chunk, stall_after
        self.read = 0

    async def receive(self) -> dict[str, Any]:
        if self.stall_after is not None and self.read >= self.stall_after:
            await asyncio.Event().wait()  # a client that stopped sending
        part = self.body[self.read : self.read + self.chunk]
        self.read += len(part)
        return {"type": "http.request", "body": part, "more_body": self.read < len(self.body)}


async def call(
    app: FastAPI, method: str, path: str, upload: Upload, token: str | None, length: bool = True
) -> tuple[int, dict[str, Any]]:
    headers = [(b"content-type", b"application/json")]
    if length:
        headers.append((b"content-length", str(len(upload.body)).encode()))
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
    }
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, upload.receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body) if body else {}


def four_mib_batch(kind: str) -> bytes:
    """100 long postings, or the worst a JSON parser meets in 4 MiB: objects of two bytes."""
    if kind == "postings":
        items = [
            {"op": "create", "posting": {"title": f"t{n}", "description": "d" * 41_000}} for n in range(100)
        ]
        body = json.dumps({"items": items}).encode()
    else:
        body = b'{"items": [' + b",".join([b"{}"] * 1_390_000) + b"]}"
    assert 4_000_000 < len(body) <= 4 * 1024 * 1024
    return body


@pytest.mark.parametrize("kind", ["postings", "small-objects"])
@pytest.mark.parametrize(("token", "status"), [(None, 401), ("not-a-token", 401), ("reader-token", 403)])
def test_a_4_mib_batch_of_a_caller_not_admitted_is_answered_without_reading_its_body(
    tmp_path, kind, token, status
):
    """Issue 35: the small objects cost 0.16 s of the event loop and a 104 MiB heap peak
    before the caller was even looked at (this test, before the gate)."""
    app = app_with_credentials(tmp_path)
    body = four_mib_batch(kind)

    async def measured() -> tuple[int, dict[str, Any], Upload, int]:
        await call(app, "POST", "/postings:batch", Upload(b"{}"), token)  # the app builds its stack once
        upload = Upload(body)
        tracemalloc.start()  # from here: tracing the stack's building would only take time
        try:
            before = tracemalloc.get_traced_memory()[0]
            answered, problem = await call(app, "POST", "/postings:batch", upload, token)
            return answered, problem, upload, tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()

    answered, problem, upload, peak = asyncio.run(measured())
    assert (answered, problem["status"]) == (status, status)
    assert upload.read == 0  # not a byte of the body read, so nothing of it parsed
    assert peak < 1024 * 1024, f"{peak} bytes allocated"


def test_a_read_only_and_a_no_scope_credential_are_refused_every_write_route_before_the_body(tmp_path):
    app = app_with_credentials(tmp_path)
    named = {"{posting_id}": "p1", "{board}": "linkedin", "{endpoint_id}": "ep_1"}
    writes = [
        (method, functools.reduce(lambda path, name: path.replace(*name), named.items(), route.path))
        for route in every_route(full_app().router.routes)
        for method in sorted(set(route.methods or ()) & _WRITE_METHODS)
    ]
    # create, replace, delete, batch, validate, redrive, the faults of /ops/boards; a webhook
    # endpoint's register, delete, rotate, replay
    assert len(writes) == 11
    for token in ("reader-token", "nobody-token"):
        for method, path in writes:
            upload = Upload(b'{"title": "x", "description": "y"}')
            answered, problem = asyncio.run(call(app, method, path, upload, token))
            assert (answered, upload.read) == (403, 0), (token, method, path)
            assert "lacks the scope" in problem["detail"]


def test_each_item_of_a_batch_counts_against_the_credentials_rate():
    http, sequencer = client(ApiSettings(tokens=TOKEN, rate_limit="10/minute"))
    item = {"op": "create", "posting": {"title": "Welder", "description": "Days"}}
    assert http.post("/postings:batch", json={"items": [item] * 5}).status_code == 200
    sent = len(sequencer.sent)

    refused = http.post("/postings:batch", json={"items": [item] * 6})  # 5 + 6 > 10

    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    assert len(sequencer.sent) == sent  # nothing of it written
    assert http.post("/postings:batch", json={"items": [item] * 4}).status_code == 200  # 5 + 1 + 4


def test_a_body_not_received_within_the_deadline_is_answered_408(tmp_path):
    app = app_with_credentials(tmp_path, body_read_timeout_s=0.2)
    upload = Upload(b'{"title": "Slow", "description": "' + b"x" * 200_000 + b'"}', stall_after=64 * 1024)
    # Within 5 s or not at all: without a deadline the app would wait for the body forever.
    answered, problem = asyncio.run(
        asyncio.wait_for(call(app, "POST", "/postings", upload, "writer-token"), 5)
    )
    assert (answered, problem["title"]) == (408, "Request timeout")


def test_a_body_over_the_limit_is_refused_as_it_streams_without_reading_the_rest(tmp_path):
    app = app_with_credentials(tmp_path)  # 1 MiB for a posting
    upload = Upload(b"x" * (8 * 1024 * 1024))
    answered, _ = asyncio.run(call(app, "POST", "/postings", upload, "writer-token", length=False))
    assert answered == 413
    assert upload.read <= 1024 * 1024 + 64 * 1024


def failures(reason: str) -> float:
    return REGISTRY.get_sample_value("jobpost_api_auth_failures_total", {"reason": reason}) or 0.0


def test_every_refusal_is_counted_and_logged_without_the_token(tmp_path, caplog):
    app = app_with_credentials(tmp_path)
    before = {reason: failures(reason) for reason in ("missing", "unknown_token", "scope")}
    caplog.set_level(logging.INFO)
    for token, status in ((None, 401), ("guessed-secret-1234", 401), ("nobody-token", 403)):
        answered, _ = asyncio.run(call(app, "GET", "/postings/p1", Upload(b""), token))
        assert answered == status

    assert {reason: failures(reason) - before[reason] for reason in before} == {
        "missing": 1,
        "unknown_token": 1,
        "scope": 1,
    }
    lines = [r.getMessage() for r in caplog.records if r.name == "jobpost.auth"]
    assert len(lines) == 3 and all("GET /postings/p1 from 127.0.0.1:50000" in line for line in lines)
    assert "nobody lacks the scope postings:read" in lines[2]
    logged = caplog.text + json.dumps([getattr(r, "auth", None) for r in caplog.records])
    assert "guessed-secret-1234" not in logged and "nobody-token" not in logged
