"""What surrounds both boards in the sandbox: tokens, budgets per minute and per day, faults
(`lose_response` judged by the board's identity of a job), the clock, stats, the refusal log
and the reset; and the control surface's own refusals."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from jobpost_dev.sandbox.app import Board
from jobpost_dev.sandbox.refusals import RefusalLog
from schemas.topics import BOARDS
from tests.unit.jobpost_dev.sandbox.harness import (
    CREDENTIALS,
    DAY_S,
    NOW_MS,
    TOKEN_PATHS,
    Sandbox,
    element,
    indeed_job,
    scenario,
)


def test_a_token_lives_its_lifetime_then_answers_401_with_linkedins_body():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/limits", {"token_ttl_s": 2})
        answer = await s.http.post(TOKEN_PATHS["linkedin"], data=CREDENTIALS)
        assert answer.json()["expires_in"] == "2" and answer.json()["token_type"] == "Bearer"
        token = answer.json()["access_token"]
        assert (await s.linkedin(element("p1"), token=token)).status_code == 200
        s.t = 2.0
        expired = await s.linkedin(element("p1", "UPDATE"), token=token)
        unknown = await s.linkedin(element("p1", "UPDATE"), token="not-issued")
        return expired, unknown, await s.get("/_sandbox/linkedin/stats")

    expired, unknown, stats = scenario(body)
    assert expired.status_code == 401 and expired.json()["serviceErrorCode"] == 65602
    assert unknown.status_code == 401 and unknown.json()["message"] == "Invalid access token"
    assert stats["expired_token_calls"] == 2 and stats["tokens_issued"] == 1 and stats["calls"] == 3


def test_shortening_the_lifetime_ends_tokens_issued_before():
    async def body(s: Sandbox):
        token = await s.token("indeed")  # an hour, Indeed's default
        await s.put("/_sandbox/indeed/limits", {"token_ttl_s": 1})
        s.t = 1.0
        return await s.graphql("mutation { jobsIngest { createSourcedJobPostings } }", {}, token)

    refused = scenario(body)
    assert refused.status_code == 200 and refused.json()["errors"][0]["extensions"]["code"] == "FORBIDDEN"


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


def test_beyond_the_budget_a_429_says_when_the_window_admits_the_call():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/limits", {"records_per_minute": 3})
        first = await s.linkedin(element("p1"), element("p2"))
        s.t = 10.0
        throttled = await s.linkedin(element("p3"), element("p4"))
        s.t = 59.9
        early = await s.linkedin(element("p3"), element("p4"))
        s.t = 60.0
        on_time = await s.linkedin(element("p3"), element("p4"))
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


def test_linkedins_daily_caps_reset_at_midnight_utc_of_the_sandboxs_clock_with_an_honest_retry_after():
    async def body(s: Sandbox):
        await s.put(
            "/_sandbox/linkedin/limits",
            {"records_per_day": 3, "requests_per_day": 5, "task_status_calls_per_day": 1},
        )
        posted = await s.elements(element("p1"), element("p2"))
        over = await s.linkedin(element("p3"), element("p4"))
        task_id = posted[0]["id"]
        first_poll = await s.tasks(task_id)
        second_poll = await s.http.get(
            "/linkedin/rest/simpleJobPostingTasks",
            params={"ids": task_id},
            headers={"Authorization": f"Bearer {await s.token('linkedin')}"},
        )
        stats = await s.get("/_sandbox/linkedin/stats")
        until_midnight = 86_400 - (NOW_MS // 1000) % 86_400  # 2023-11-14T22:13:20Z: 6,400 s
        await s.advance_clock(until_midnight)
        after = await s.linkedin(element("p3"), element("p4"))
        return over, first_poll, second_poll, stats, after, until_midnight

    over, first_poll, second_poll, stats, after, until_midnight = scenario(body)
    assert over.status_code == 429 and over.headers["Retry-After"] == str(until_midnight)
    assert "3 records a day" in over.json()["message"]
    assert first_poll["results"] and second_poll.status_code == 429
    assert stats["today"] == {"records": 2, "requests": 1, "task_status_calls": 1, "status_calls": 0}
    assert after.status_code == 200


def test_a_call_larger_than_the_days_cap_never_fits():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/limits", {"records_per_day": 1})
        return await s.linkedin(element("p1"), element("p2"))

    answer = scenario(body)
    assert answer.status_code == 429 and "Retry-After" not in answer.headers


def test_a_batch_over_batch_max_is_refused_as_a_whole():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/limits", {"batch_max": 2})
        return await s.linkedin(element("p0"), element("p1"), element("p2"))

    answer = scenario(body)
    assert answer.status_code == 400 and "at most 2" in answer.json()["message"]


def test_a_lost_answer_leaves_the_call_applied_and_the_retry_meets_the_boards_identity():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/faults", {"mode": "lose_response"})
        await s.put("/_sandbox/indeed/faults", {"mode": "lose_response"})
        lost = []
        for call in (s.linkedin(element("p1")), s.upsert(indeed_job("p1"))):
            try:
                await call
            except ConnectionAbortedError as exc:  # dropped before the body
                lost.append(type(exc).__name__)
        await s.put("/_sandbox/linkedin/faults", {"mode": "none"})
        await s.put("/_sandbox/indeed/faults", {"mode": "none"})
        (retry,) = await s.elements(element("p1"))
        repeat = await s.task(retry["id"])
        again = await s.upsert(indeed_job("p1"))
        return (
            lost,
            repeat,
            again,
            await s.get("/_sandbox/linkedin/jobs", posting_id="p1"),
            await s.get("/_sandbox/indeed/jobs", posting_id="p1"),
        )

    lost, repeat, again, linkedin_jobs, indeed_jobs = scenario(body)
    assert len(lost) == 2
    assert repeat["status"] == "FAILED" and "same partnerIdentifier already exists" in repeat["errorMessage"]
    assert len(linkedin_jobs["jobs"]) == 1 and len(indeed_jobs["jobs"]) == 1
    sourced_id = again["data"]["jobsIngest"]["createSourcedJobPostings"]["results"][0]["jobPosting"]
    assert sourced_id["sourcedPostingId"] == indeed_jobs["jobs"][0]["id"]


def test_a_targeted_reject_refuses_that_element_only():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/faults", {"mode": "reject", "posting_ids": ["p2"]})
        return await s.elements(element("p1"), element("p2"))

    assert [e["status"] for e in scenario(body)] == [202, 400]


def test_the_clock_moves_forward_only_and_a_reset_puts_it_back_on_real_time():
    async def body(s: Sandbox):
        before = await s.get("/_sandbox/clock")
        moved = await s.put("/_sandbox/clock", {"advance_s": DAY_S})
        back = await s.put("/_sandbox/clock", {"advance_s": -1})
        await s.http.delete("/_sandbox")
        return before, moved.json(), back, await s.get("/_sandbox/clock")

    before, moved, back, reset = scenario(body)
    assert before == {"now": NOW_MS, "iso": "2023-11-14T22:13:20.000Z", "advanced_s": 0.0}
    assert moved["now"] == NOW_MS + DAY_S * 1000 and moved["iso"] == "2023-11-15T22:13:20.000Z"
    assert back.status_code == 422
    assert reset == before


def test_the_control_surface_answers_bad_input_with_422_and_a_reset_forgets_all_but_tokens():
    async def body(s: Sandbox):
        bad = [
            await s.put("/_sandbox/linkedin/limits", {"records_per_minute": 0}),
            await s.put("/_sandbox/linkedin/limits", {"batch_max": 101}),
            await s.put("/_sandbox/linkedin/limits", {"tokens": 1}),
            await s.put("/_sandbox/indeed/limits", {"task_fail_probability": 0.1}),
            await s.put("/_sandbox/indeed/limits", {"records_per_day": 10}),
            await s.put("/_sandbox/linkedin/limits", {"indexing_delay_s": 1}),
            await s.put("/_sandbox/monster/limits", {}),
            await s.put("/_sandbox/indeed/faults", {"mode": "sometimes"}),
            await s.put("/_sandbox/linkedin/jobs/urn:li:jobPosting:1/close", {}),
        ]
        await s.put("/_sandbox/linkedin/limits", {"records_per_minute": 5})
        await s.put("/_sandbox/linkedin/faults", {"mode": "error"})
        await s.linkedin(element("p1"))
        await s.http.delete("/_sandbox")
        after = await s.linkedin(element("p1"))
        return bad, after, await s.get("/_sandbox/linkedin/limits"), await s.get("/_sandbox/linkedin/stats")

    bad, after, limits, stats = scenario(body)
    assert [b.status_code for b in bad] == [422] * 9
    assert after.status_code == 200  # the token still works, the fault is gone
    assert limits == {
        "token_ttl_s": 1800.0,
        "records_per_minute": None,
        "requests_per_minute": None,
        "batch_max": 100,
        "records_per_day": None,
        "requests_per_day": None,
        "task_status_calls_per_day": None,
        "status_calls_per_day": None,
        "task_delay_s": None,
        "task_fail_probability": None,
        "job_lifetime_s": 180 * DAY_S,
        "renewal_s": 30 * DAY_S,
        "indexing_delay_s": None,
        "rejection_probability": None,
        "reactivation_window_s": None,
    }
    assert stats["calls"] == 1 and stats["tokens_issued"] == 0


def test_every_refusal_is_counted_and_written_to_the_refusal_log(tmp_path):
    log = tmp_path / "refusals.jsonl"

    async def body(s: Sandbox):
        await s.elements(element("p1", description="Short."), element("p2", title=None))
        await s.upsert(indeed_job("p3", body__title=None))
        await s.http.delete("/_sandbox")  # the stats go, the file stays
        return await s.get("/_sandbox/linkedin/stats")

    stats = scenario(body, RefusalLog(log))
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(x["board"], x["posting_id"], x["where"]) for x in lines] == [
        ("linkedin", "p2", "element"),
        ("linkedin", "p1", "task"),
        ("indeed", "p3", "element"),
    ]
    assert stats["refused"] == 0  # after the reset


def test_an_outage_resets_every_call_to_the_board_its_token_endpoint_included():
    async def body(s: Sandbox):
        await s.put("/_sandbox/indeed/faults", {"mode": "outage"})
        failures = []
        for call in (s.token("indeed"), s.upsert(indeed_job("p1"))):
            try:
                await call
            except ConnectionResetError as exc:  # in process there is no socket to reset
                failures.append(exc)
        return failures, await s.token("linkedin")

    failures, other_board = scenario(body)
    assert len(failures) == 2 and other_board


def test_the_sandboxs_boards_are_the_destinations_boards():
    assert set(get_args(Board)) == {board.value for board in BOARDS}
