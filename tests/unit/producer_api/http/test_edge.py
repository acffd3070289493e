"""What every answer carries and what refuses a request before any work: security headers,
the documentation pages served from the package, the rate per credential, the bound on
requests in flight. The app is never started (no lifespan): nothing connects."""

import asyncio
import threading
import time

import pytest
from fastapi.testclient import TestClient

from producer_api.config import ApiSettings
from producer_api.http.app import create_app
from producer_api.http.headers import PAGE_POLICY
from producer_api.http.identity import Identity
from producer_api.http.limits import ConcurrencyLimit, RateLimit
from producer_api.http.problems import Problem


@pytest.fixture
def client() -> TestClient:
    return TestClient(create_app(ApiSettings(tokens="t")))


def test_the_playground_allows_no_inline_script_and_no_framing(client):
    page = client.get("/ui/")
    assert page.status_code == 200
    policy = page.headers["Content-Security-Policy"]
    assert policy == PAGE_POLICY
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Referrer-Policy"] == "no-referrer"
    assert "<script>" not in page.text and " style=" not in page.text  # nothing inline to allow
    assert client.get("/ui/app.js").headers["Content-Security-Policy"] == PAGE_POLICY


def test_the_docs_load_only_this_origins_scripts(client):
    for path in ("/docs", "/redoc"):
        page = client.get(path)
        assert page.status_code == 200
        assert "http" not in page.text.replace('lang="en"', "")  # no URL of another origin
        assert "<script>" not in page.text
        assert "script-src 'self';" in page.headers["Content-Security-Policy"]
        for script in (
            "/docs/assets/swagger-ui-bundle.js",
            "/docs/assets/redoc.standalone.js",
            "/docs/page/swagger-start.js",
        ):
            if script in page.text:
                assert client.get(script).status_code == 200


def test_redocs_bundle_fetches_no_image_from_redoclys_cdn(client):
    # The sidebar's logo came from https://cdn.redoc.ly, which the page's img-src refuses.
    bundle = client.get("/docs/assets/redoc.standalone.js")
    assert bundle.status_code == 200 and bundle.headers["content-type"].startswith("text/javascript")
    assert "cdn.redoc.ly" not in bundle.text
    assert 'alt:"redocly logo"' in bundle.text  # the same bundle, its logo empty


def test_the_docs_can_be_turned_off():
    off = TestClient(create_app(ApiSettings(tokens="t", docs=False)))
    assert [off.get(p).status_code for p in ("/docs", "/redoc", "/openapi.json")] == [404, 404, 404]


def test_json_answers_allow_nothing_to_run(client):
    answer = client.get("/healthz")
    assert answer.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'none'"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"


def test_a_credential_over_its_rate_is_told_when_to_come_back():
    async def checks() -> Problem:
        rate = RateLimit("3/minute")
        for _ in range(3):
            await rate.check("ats-acme")
        with pytest.raises(Problem) as refused:
            await rate.check("ats-acme")
        await rate.check("ats-globex")  # another credential has its own budget
        return refused.value

    refused = asyncio.run(checks())
    assert refused.status == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60


def test_a_batch_larger_than_the_rate_is_refused_whenever_it_comes_and_costs_nothing(monkeypatch):
    async def checks() -> Problem:
        rate = RateLimit("60/second")
        await rate.check("batcher")  # the gate counts the request itself
        # ... and the items come in the next second: the sliding window's count of the second
        # before is rounded down, so 60 more would fit
        later = time.time() + 1.0
        monkeypatch.setattr(time, "time", lambda: later)
        with pytest.raises(Problem) as refused:
            await rate.check("batcher", 60, counted=1)
        for _ in range(59):
            await rate.check("batcher")  # the refused batch took none of the rate
        return refused.value

    refused = asyncio.run(checks())
    assert refused.status == 429
    assert "over its rate of 60 per 1 second with 61 requests at once" in refused.detail
    assert "Retry-After" not in refused.headers


def test_checking_a_rate_starts_no_thread(monkeypatch):
    """The synchronous in-memory storage started a thread to expire its counters after
    almost every request (9 in 10 here), on the event loop's thread."""
    started = []
    start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda thread: (started.append(thread), start(thread)))

    async def checks() -> None:
        rate = RateLimit("1000/second")
        for _ in range(10):
            await rate.check("ats-acme")
            await asyncio.sleep(0.02)  # longer than an expiry run

    asyncio.run(checks())
    assert started == []


def test_past_the_bound_on_requests_in_flight_the_answer_is_503_at_once():
    release = asyncio.Event()
    answers: list[tuple[int, dict[str, str]]] = []

    async def slow(scope, receive, send):
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    limited = ConcurrencyLimit(slow, limit=2)

    async def call(path: str = "/postings"):
        sent = []

        async def send(message):
            sent.append(message)

        await limited({"type": "http", "path": path, "method": "GET", "headers": []}, None, send)
        start = sent[0]
        answers.append((start["status"], {k.decode(): v.decode() for k, v in start["headers"]}))

    async def scenario():
        waiting = [asyncio.create_task(call()) for _ in range(2)]
        await asyncio.sleep(0.01)
        await call()  # the third: refused without waiting
        probe = asyncio.create_task(call("/healthz"))  # probes are never refused
        await asyncio.sleep(0.01)
        release.set()
        await asyncio.gather(*waiting, probe)

    asyncio.run(scenario())
    refused = answers[0]
    assert refused[0] == 503 and refused[1]["retry-after"] == "1"
    assert refused[1]["content-type"] == "application/problem+json"
    assert sorted(status for status, _ in answers) == [200, 200, 200, 503]


def test_with_an_internal_port_the_operators_endpoints_are_only_there():
    app = create_app(ApiSettings(tokens="t", port=8000, internal_port=9000))
    public = TestClient(app, base_url="http://127.0.0.1:8000")
    on_internal = TestClient(app, base_url="http://127.0.0.1:9000")
    # The test client names the server by its base URL, as the listening socket would.
    for path in ("/metrics", "/openapi.json", "/docs"):
        assert public.get(path).status_code == 404
        assert on_internal.get(path).status_code == 200
    assert public.get("/ui/").status_code == 200  # the API and the page are public
    assert on_internal.get("/ui/").status_code == 404
    assert public.get("/healthz").status_code == on_internal.get("/healthz").status_code == 200


def test_the_snapshot_is_served_on_the_internal_port_only_and_nowhere_without_one():
    # Issue 35: it was on the public port even with an internal port set.
    app = create_app(ApiSettings(tokens="t", port=8000, internal_port=9000))
    app.state.identity = Identity.of(ApiSettings(tokens="t"))
    token = {"Authorization": "Bearer t"}
    public = TestClient(app, base_url="http://127.0.0.1:8000")
    on_internal = TestClient(app, base_url="http://127.0.0.1:9000")
    assert public.get("/ops/snapshot", headers=token).status_code == 404
    assert on_internal.get("/ops/snapshot").status_code == 401  # there, and behind its scope
    alone = create_app(ApiSettings(tokens="t"))
    alone.state.identity = Identity.of(ApiSettings(tokens="t"))
    assert TestClient(alone).get("/ops/snapshot", headers=token).status_code == 404
