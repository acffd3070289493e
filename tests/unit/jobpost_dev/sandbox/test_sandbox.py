"""The sandbox app in process with a fake clock: tokens, budgets, batches and per-element
refusals, tasks, and the control surface (the real process is exercised by
tests/integration/consumers/test_board_adapters.py)."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

import httpx
import pytest

from jobpost_dev.sandbox import create_sandbox
from jobpost_dev.sandbox.app import Board
from jobpost_dev.sandbox.state import Clock
from jobpost_dev.sandbox.tokens import SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET
from schemas.topics import BOARDS

NOW_MS = 1_700_000_000_000
CREDENTIALS = {
    "grant_type": "client_credentials",
    "client_id": SANDBOX_CLIENT_ID,
    "client_secret": SANDBOX_CLIENT_SECRET,
}
TOKEN_PATHS = {"linkedin": "/linkedin/oauth/v2/accessToken", "indeed": "/indeed/oauth/v2/tokens"}


class Sandbox:
    """The app, a client for it, and the time it lives in."""

    def __init__(self) -> None:
        self.t = 0.0
        app = create_sandbox(Clock(now=lambda: self.t, wall_ms=lambda: NOW_MS + int(self.t * 1000)))
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sandbox")

    async def token(self, board: str) -> str:
        response = await self.http.post(TOKEN_PATHS[board], data=CREDENTIALS)
        assert response.status_code == 200, response.text
        return response.json()["access_token"]

    async def linkedin(self, elements: list[dict[str, Any]], keys: list[str], token: str) -> httpx.Response:
        headers = {
            "Authorization": f"Bearer {token}",
            "x-restli-method": "batch_create",
            "LinkedIn-Version": "202604",
            "Idempotency-Key": ", ".join(keys),
        }
        return await self.http.post(
            "/linkedin/rest/simpleJobPostings", json={"elements": elements}, headers=headers
        )

    async def tasks(self, ids: list[str], token: str) -> httpx.Response:
        return await self.http.get(
            "/linkedin/rest/simpleJobPostingTasks",
            params=[("ids", i) for i in ids],
            headers={"Authorization": f"Bearer {token}", "LinkedIn-Version": "202604"},
        )

    async def indeed(self, mutation: str, items: list[dict[str, Any]], keys: list[str], token: str):
        field = "jobPostings" if mutation == "createSourcedJobPostings" else "jobs"
        body = {
            "query": f"mutation {{ jobsIngest {{ {mutation} }} }}",
            "variables": {"input": {field: items}},
        }
        headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": ", ".join(keys)}
        return await self.http.post("/indeed/graphql", json=body, headers=headers)

    async def get(self, path: str) -> Any:
        return (await self.http.get(path)).json()


def job(posting_id: str, operation: str = "CREATE", **changes: Any) -> dict[str, Any]:
    element = {
        "integrationContext": "urn:li:organization:1",
        "companyApplyUrl": "https://careers.example.com/jobs",
        "externalJobPostingId": posting_id,
        "jobPostingOperationType": operation,
        "title": "Engineer",
        "description": "Builds",
        "listedAt": NOW_MS,
        "location": "San Francisco, California",
    }
    return {k: v for k, v in {**element, **changes}.items() if v is not None}


def indeed_job(posting_id: str, **source: Any) -> dict[str, Any]:
    job_source = {
        "companyName": "Co",
        "sourceName": "Co",
        "sourceType": "Employer",
        "employerIds": [{"type": "T", "id": "1"}],
        **source,
    }
    return {
        "body": {
            "title": "Engineer",
            "description": "Builds",
            "location": {"country": "US", "cityRegionPostal": "Austin, Texas"},
            "benefits": [],
        },
        "metadata": {
            "jobSource": {k: v for k, v in job_source.items() if v is not None},
            "jobPostingId": posting_id,
            "datePublished": "2023-11-14T22:13:20.000Z",
            "url": "https://careers.example.com/jobs",
        },
    }


def scenario(body):
    async def main():
        sandbox = Sandbox()
        async with sandbox.http:
            return await body(sandbox)

    return asyncio.run(main())


def test_a_token_lives_its_lifetime_then_answers_401_with_linkedins_body():
    async def body(s: Sandbox):
        await s.http.put("/_sandbox/linkedin/limits", json={"token_ttl_s": 2})
        answer = await s.http.post(TOKEN_PATHS["linkedin"], data=CREDENTIALS)
        assert answer.json()["expires_in"] == "2" and answer.json()["token_type"] == "Bearer"
        token = answer.json()["access_token"]
        assert (await s.linkedin([job("p1")], ["p1:0"], token)).status_code == 200
        s.t = 2.0
        expired = await s.linkedin([job("p1", "UPDATE")], ["p1:1"], token)
        unknown = await s.linkedin([job("p1", "UPDATE")], ["p1:1"], "not-issued")
        return expired, unknown, await s.get("/_sandbox/linkedin/stats")

    expired, unknown, stats = scenario(body)
    assert expired.status_code == 401 and expired.json()["serviceErrorCode"] == 65602
    assert unknown.status_code == 401 and unknown.json()["message"] == "Invalid access token"
    assert stats["expired_token_calls"] == 2 and stats["tokens_issued"] == 1 and stats["calls"] == 3


def test_shortening_the_lifetime_ends_tokens_issued_before():
    async def body(s: Sandbox):
        token = await s.token("indeed")  # an hour, Indeed's default
        await s.http.put("/_sandbox/indeed/limits", json={"token_ttl_s": 1})
        s.t = 1.0
        return await s.indeed("createSourcedJobPostings", [indeed_job("p1")], ["p1:0"], token)

    refused = scenario(body)
    assert (
        refused.status_code == 401 and refused.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    )


@pytest.mark.parametrize(
    ("form", "status", "error"),
    [
        ({**CREDENTIALS, "client_secret": "wrong"}, 401, "invalid_client"),
        ({**CREDENTIALS, "grant_type": "password"}, 400, "unsupported_grant_type"),
        ({"grant_type": "client_credentials"}, 400, "invalid_request"),
    ],
)
def test_the_token_endpoints_refuse_as_rfc_6749_says(form, status, error):
    async def body(s: Sandbox):
        return await s.http.post(TOKEN_PATHS["indeed"], data=form)

    answer = scenario(body)
    assert (answer.status_code, answer.json()["error"]) == (status, error)


def test_linkedin_refuses_the_element_without_integration_context_and_applies_the_rest():
    async def body(s: Sandbox):
        token = await s.token("linkedin")
        elements = [
            job("p1"),
            job("p2", integrationContext=None),
            job("p3", location=None),
            job("p4", title="x" * 201),
        ]
        answer = await s.linkedin(elements, ["p1:0", "p2:0", "p3:0", "p4:0"], token)
        return answer, [await s.get(f"/_sandbox/linkedin/postings/p{i}") for i in (1, 2)]

    answer, (applied, refused) = scenario(body)
    statuses = [e["status"] for e in answer.json()["elements"]]
    assert statuses == [202, 422, 422, 422]
    messages = [e["error"]["message"] for e in answer.json()["elements"][1:]]
    assert "/integrationContext :: field is required" in messages[0]
    assert "/location :: field is required" in messages[1]
    assert "/title :: length 201 exceeds" in messages[2]
    assert applied["versions"] == [0] and refused["versions"] == [] and refused["requests"] == 1


def test_linkedin_tasks_report_in_progress_then_the_version_counts_and_a_repeat_is_the_same_task():
    async def body(s: Sandbox):
        token = await s.token("linkedin")
        await s.http.put("/_sandbox/linkedin/limits", json={"task_delay_s": 2})
        task_id = (await s.linkedin([job("p1")], ["p1:0"], token)).json()["elements"][0]["id"]
        during = (await s.tasks([task_id], token)).json()["results"][task_id]["status"]
        before = (await s.get("/_sandbox/linkedin/postings/p1"))["versions"]
        again = (await s.linkedin([job("p1")], ["p1:0"], token)).json()["elements"][0]["id"]
        s.t = 2.0
        after = (await s.tasks([task_id, "urn:li:simpleJobPostingTask:nope"], token)).json()
        return task_id, during, before, again, after, await s.get("/_sandbox/linkedin/postings/p1")

    task_id, during, before, again, after, posting = scenario(body)
    assert during == "IN_PROGRESS" and before == []
    assert again == task_id and posting["duplicates"] == 1
    assert after["results"][task_id]["status"] == "SUCCEEDED"
    assert "urn:li:simpleJobPostingTask:nope" in after["errors"]
    assert posting["versions"] == [0]
    (entry,) = posting["log"]
    assert (entry["submitted_at"], entry["ended_at"], entry["task_id"]) == (NOW_MS, NOW_MS + 2000, task_id)


def test_a_batch_over_batch_max_is_refused_as_a_whole():
    async def body(s: Sandbox):
        token = await s.token("linkedin")
        await s.http.put("/_sandbox/linkedin/limits", json={"batch_max": 2})
        return await s.linkedin([job(f"p{i}") for i in range(3)], [f"p{i}:0" for i in range(3)], token)

    answer = scenario(body)
    assert answer.status_code == 400 and "at most 2" in answer.json()["message"]


def test_beyond_the_budget_a_429_says_when_the_window_admits_the_call():
    async def body(s: Sandbox):
        token = await s.token("linkedin")
        await s.http.put("/_sandbox/linkedin/limits", json={"records_per_minute": 3})
        first = await s.linkedin([job("p1"), job("p2")], ["p1:0", "p2:0"], token)
        s.t = 10.0
        throttled = await s.linkedin([job("p3"), job("p4")], ["p3:0", "p4:0"], token)
        s.t = 59.9
        early = await s.linkedin([job("p3"), job("p4")], ["p3:0", "p4:0"], token)
        s.t = 60.0
        on_time = await s.linkedin([job("p3"), job("p4")], ["p3:0", "p4:0"], token)
        seen = await s.get("/_sandbox/linkedin/postings/p3")
        return first, throttled, early, on_time, await s.get("/_sandbox/linkedin/stats"), seen

    first, throttled, early, on_time, stats, seen = scenario(body)
    assert (seen["requests"], seen["versions"]) == (3, [0])  # refused calls were seen, applied nothing
    assert first.status_code == 200
    assert throttled.status_code == 429 and throttled.headers["Retry-After"] == "50"
    assert early.status_code == 429 and early.headers["Retry-After"] == "1"
    assert on_time.status_code == 200
    assert stats["throttled"] == 2 and stats["max_records_in_60s"] == 2 and stats["records"] == 4
    assert stats["max_records_per_call"] == 2


def test_indeed_refuses_a_job_without_its_source_and_applies_the_rest_then_expires_by_its_id():
    async def body(s: Sandbox):
        token = await s.token("indeed")
        jobs = [indeed_job("p1"), indeed_job("p2", sourceName=None), indeed_job("p3", employerIds=None)]
        upserted = (await s.indeed("createSourcedJobPostings", jobs, ["p1:0", "p2:0", "p3:0"], token)).json()
        sourced_id = upserted["data"]["jobsIngest"]["createSourcedJobPostings"]["results"][0]["jobPosting"]
        ids = [{"sourcedPostingId": sourced_id["sourcedPostingId"]}, {"sourcedPostingId": "p3"}]
        expired = (await s.indeed("expireSourcedJobsBySourcedPostingId", ids, ["p1:1", "p3:1"], token)).json()
        return upserted, expired, await s.get("/_sandbox/indeed/postings/p1")

    upserted, expired, posting = scenario(body)
    results = upserted["data"]["jobsIngest"]["createSourcedJobPostings"]["results"]
    assert results[1] == {"jobPosting": None} and results[2] == {"jobPosting": None}
    assert [(e["path"][3], e["extensions"]["code"]) for e in upserted["errors"]] == [
        (1, "BAD_USER_INPUT"),
        (2, "BAD_USER_INPUT"),
    ]
    assert (
        "sourceName" in upserted["errors"][0]["message"] and "employerIds" in upserted["errors"][1]["message"]
    )
    assert expired["data"]["jobsIngest"]["expireSourcedJobsBySourcedPostingId"]["results"][0]["trackingKey"]
    assert expired["errors"][0]["path"][3] == 1  # "p3" is our id, not Indeed's
    assert posting["versions"] == [0, 1] and posting["status"] == "closed"


def test_the_control_surface_answers_bad_input_with_422_and_a_reset_forgets_all_but_tokens():
    async def body(s: Sandbox):
        bad = [
            await s.http.put("/_sandbox/linkedin/limits", json={"records_per_minute": 0}),
            await s.http.put("/_sandbox/linkedin/limits", json={"batch_max": 101}),
            await s.http.put("/_sandbox/linkedin/limits", json={"tokens": 1}),
            await s.http.put("/_sandbox/indeed/limits", json={"task_fail_probability": 0.1}),
            await s.http.put("/_sandbox/monster/limits", json={}),
            await s.http.put("/_sandbox/indeed/faults", json={"mode": "sometimes"}),
        ]
        token = await s.token("linkedin")
        await s.http.put("/_sandbox/linkedin/limits", json={"records_per_minute": 5})
        await s.http.put("/_sandbox/linkedin/faults", json={"mode": "error"})
        await s.linkedin([job("p1")], ["p1:0"], token)
        await s.http.delete("/_sandbox")
        after = await s.linkedin([job("p1")], ["p1:0"], token)
        return bad, after, await s.get("/_sandbox/linkedin/limits"), await s.get("/_sandbox/linkedin/stats")

    bad, after, limits, stats = scenario(body)
    assert [b.status_code for b in bad] == [422] * 6
    assert after.status_code == 200  # the token still works, the fault is gone
    assert limits == {
        "token_ttl_s": 1800.0,
        "records_per_minute": None,
        "requests_per_minute": None,
        "batch_max": 100,
        "task_delay_s": None,
        "task_fail_probability": None,
    }
    assert stats["calls"] == 1 and stats["tokens_issued"] == 0


def test_a_targeted_reject_refuses_that_element_only():
    async def body(s: Sandbox):
        token = await s.token("linkedin")
        await s.http.put("/_sandbox/linkedin/faults", json={"mode": "reject", "posting_ids": ["p2"]})
        return await s.linkedin([job("p1"), job("p2")], ["p1:0", "p2:0"], token)

    answer = scenario(body)
    assert [e["status"] for e in answer.json()["elements"]] == [202, 400]


def test_keys_that_do_not_name_each_element_are_refused():
    async def body(s: Sandbox):
        token = await s.token("linkedin")
        return [
            await s.linkedin([job("p1"), job("p2")], ["p1:0"], token),
            await s.linkedin([job("p1")], ["p2:0"], token),
            await s.linkedin([job("p1")], ["p1"], token),
        ]

    assert [a.status_code for a in scenario(body)] == [400, 400, 400]


def test_an_outage_resets_every_call_to_the_board_its_token_endpoint_included():
    async def body(s: Sandbox):
        await s.http.put("/_sandbox/indeed/faults", json={"mode": "outage"})
        failures = []
        for call in (
            s.token("indeed"),
            s.indeed("createSourcedJobPostings", [indeed_job("p1")], ["p1:0"], "t"),
        ):
            try:
                await call
            except ConnectionResetError as exc:  # in process there is no socket to reset
                failures.append(exc)
        return failures, await s.token("linkedin")

    failures, other_board = scenario(body)
    assert len(failures) == 2 and other_board


def test_the_sandboxs_boards_are_the_destinations_boards():
    assert set(get_args(Board)) == {board.value for board in BOARDS}
