"""Bad requests get a clear 4xx problem+json answer and change nothing in the log.

The test client checks every answer of 400 or more for what the contract promises
(`application/problem+json` naming its status, type, title and detail, no stack trace)."""

import httpx
import pytest

from tests import postings
from tests.client import ABSENT, ApiClient
from tests.processes import read_postings

POSTING = postings.body(0, notes="hybrid")


@pytest.fixture
def posting(api) -> dict:
    return api.client.create(**POSTING)


def test_refused_requests_answer_problems_and_write_nothing(api, posting, kafka, topics):
    before = read_postings(kafka, topics.postings)
    client = api.client

    ApiClient(api.url, token=None).create(expect=401)
    ApiClient(api.url, token="wrong").create(expect=401)
    client.get("no-such-posting", expect=404)
    client.get("no-such-posting", strong=True, expect=404)
    client.replace("no-such-posting", expect=404)
    stale = client.replace(posting["id"], if_match=7, expect=412)
    assert "version" in stale["detail"]
    for changes in (
        {"title": ABSENT, "description": "no title"},
        {"title": ""},
        {"title": "   "},
        {"title": "x" * 201},
        {"description": "x" * 25_001},
        {"notes": "x" * 2_001},
        {"salary": 100},  # not a salary range
        {"bonus": 100},  # no such field
        {"title": 42},
    ):
        problem = client.create(**changes, expect=422)
        assert problem["errors"], changes
        client.replace(posting["id"], **changes, expect=422)
    json_body = {"content-type": "application/json"}
    lone_surrogate = b'{"title": "bad \\ud800 title", "description": "x"}'
    client.request("POST", "/postings", content=lone_surrogate, headers=json_body, expect=422)
    client.request("POST", "/postings", content=b"{not json", headers=json_body, expect=422)
    client.create(description="x" * (1024 * 1024 + 1), expect=413)
    client.request("GET", "/postings/x", params={"consistency": "sometimes"}, expect=422)

    assert read_postings(kafka, topics.postings) == before


def test_deleted_posting_answers_410_to_every_call(api, posting, kafka, topics):
    client = api.client
    client.delete(posting["id"])
    after_delete = read_postings(kafka, topics.postings)

    client.get(posting["id"], expect=410)
    client.get(posting["id"], strong=True, expect=410)
    client.replace(posting["id"], **POSTING, expect=410)
    client.delete(posting["id"], expect=410)

    assert read_postings(kafka, topics.postings) == after_delete


def test_matching_if_match_is_accepted_and_etag_follows(api, posting):
    replaced = api.client.replace(posting["id"], **POSTING, if_match=0)  # the client checks the ETag
    assert replaced["version"] == 1


def test_health_endpoints_need_no_token(api):
    assert httpx.get(f"{api.url}/healthz").status_code == 200
    ready = httpx.get(f"{api.url}/readyz").json()
    assert ready["checks"]["kafka"] and ready["checks"]["sequencer"]
    metrics = httpx.get(f"{api.url}/metrics").text
    assert "jobpost_api_request_seconds" in metrics
    assert httpx.get(f"{api.url}/openapi.json").json()["paths"]["/postings"]
