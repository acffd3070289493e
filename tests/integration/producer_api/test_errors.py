"""Bad requests get a clear 4xx problem+json answer and change nothing in the log."""

import httpx
import pytest

from tests.processes import read_postings

POSTING = {"title": "Data Engineer", "description": "Pipelines", "notes": "hybrid"}


@pytest.fixture
def posting(api) -> dict:
    response = httpx.post(f"{api.url}/postings", json=POSTING, headers=api.headers, timeout=15)
    assert response.status_code == 201
    return response.json()


def assert_problem(response: httpx.Response, status: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status
    assert body["title"] and body["detail"] and body["type"]
    assert "Traceback" not in response.text
    return body


def test_refused_requests_answer_problems_and_write_nothing(api, posting, kafka, topics):
    before = read_postings(kafka, topics.postings)
    url = f"{api.url}/postings"
    item = f"{url}/{posting['id']}"
    h = api.headers

    assert_problem(httpx.post(url, json=POSTING), 401)
    assert_problem(httpx.post(url, json=POSTING, headers={"Authorization": "Bearer wrong"}), 401)
    assert_problem(httpx.get(f"{url}/no-such-posting", headers=h), 404)
    strong = {"consistency": "strong"}
    assert_problem(httpx.get(f"{url}/no-such-posting", params=strong, headers=h, timeout=15), 404)
    assert_problem(httpx.put(f"{url}/no-such-posting", json=POSTING, headers=h, timeout=15), 404)
    stale = assert_problem(httpx.put(item, json=POSTING, headers={**h, "If-Match": '"7"'}, timeout=15), 412)
    assert "version" in stale["detail"]
    for body in (
        {"description": "no title"},
        {**POSTING, "title": ""},
        {**POSTING, "title": "   "},
        {**POSTING, "title": "x" * 201},
        {**POSTING, "description": "x" * 25_001},
        {**POSTING, "notes": "x" * 2_001},
        {**POSTING, "salary": 100},
        {**POSTING, "title": 42},
    ):
        problem = assert_problem(httpx.post(url, json=body, headers=h), 422)
        assert problem["errors"], body
        assert_problem(httpx.put(item, json=body, headers=h), 422)
    lone_surrogate = b'{"title": "bad \\ud800 title", "description": "x"}'
    assert_problem(
        httpx.post(url, content=lone_surrogate, headers={**h, "content-type": "application/json"}), 422
    )
    assert_problem(
        httpx.post(url, content=b"{not json", headers={**h, "content-type": "application/json"}), 422
    )
    big = {**POSTING, "description": "x" * (1024 * 1024 + 1)}
    assert_problem(httpx.post(url, json=big, headers=h), 413)
    assert_problem(httpx.get(url + "/x", params={"consistency": "sometimes"}, headers=h), 422)

    assert read_postings(kafka, topics.postings) == before


def test_deleted_posting_answers_410_to_every_call(api, posting, kafka, topics):
    item = f"{api.url}/postings/{posting['id']}"
    assert httpx.delete(item, headers=api.headers, timeout=15).status_code == 200
    after_delete = read_postings(kafka, topics.postings)

    assert_problem(httpx.get(item, headers=api.headers), 410)
    assert_problem(httpx.get(item, params={"consistency": "strong"}, headers=api.headers), 410)
    assert_problem(httpx.put(item, json=POSTING, headers=api.headers, timeout=15), 410)
    assert_problem(httpx.delete(item, headers=api.headers, timeout=15), 410)

    assert read_postings(kafka, topics.postings) == after_delete


def test_matching_if_match_is_accepted_and_etag_follows(api, posting):
    item = f"{api.url}/postings/{posting['id']}"
    response = httpx.put(item, json=POSTING, headers={**api.headers, "If-Match": '"0"'}, timeout=15)
    assert response.status_code == 200
    assert response.headers["ETag"] == '"1"'
    assert response.json()["version"] == 1


def test_health_endpoints_need_no_token(api):
    assert httpx.get(f"{api.url}/healthz").status_code == 200
    ready = httpx.get(f"{api.url}/readyz").json()
    assert ready["checks"]["kafka"] and ready["checks"]["sequencer"]
    metrics = httpx.get(f"{api.url}/metrics").text
    assert "jobpost_api_request_seconds" in metrics
    assert httpx.get(f"{api.url}/openapi.json").json()["paths"]["/postings"]
