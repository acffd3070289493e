"""Indeed in the sandbox, as its documents describe it: an upsert keyed on the client,
`sourceName` and `jobPostingId` answering a `sourcedPostingId` stable for the job, refusals as
BAD_USER_INPUT errors on HTTP 200 whose path names the job, received before live (or
rejected), expiry by `sourcedPostingId`, reactivation within 30 days, and a token it does
not know answered FORBIDDEN."""

from __future__ import annotations

from typing import Any

from tests.unit.jobpost_dev.sandbox.harness import DAY_S, NODE, UPSERT, Sandbox, indeed_job, scenario


def results(answer: dict[str, Any], mutation: str = "createSourcedJobPostings") -> list[Any]:
    return list(answer["data"]["jobsIngest"][mutation]["results"])


def sourced_id(answer: dict[str, Any], index: int = 0) -> str:
    return str(results(answer)[index]["jobPosting"]["sourcedPostingId"])


def test_an_upsert_is_the_same_job_its_sourcedpostingid_stable_and_idempotency_key_unread():
    async def body(s: Sandbox):
        first = sourced_id(await s.upsert(indeed_job("p1")))
        headers = {"Authorization": f"Bearer {await s.token('indeed')}", "Idempotency-Key": "p1:1"}
        again = await s.http.post(
            "/indeed/graphql",
            json={"query": UPSERT, "variables": {"input": {"jobPostings": [indeed_job("p1")]}}},
            headers=headers,
        )
        edited = sourced_id(await s.upsert(indeed_job("p1", body__title="Staff Backend Engineer")))
        jobs = await s.get("/_sandbox/indeed/jobs", posting_id="p1")
        return first, sourced_id(again.json()), edited, jobs, await s.get("/_sandbox/indeed/postings/p1")

    first, again, edited, jobs, posting = scenario(body)
    assert first == again == edited
    (job,) = jobs["jobs"]
    assert (job["id"], job["url"], job["version"], job["title"]) == (first, None, 1, "Staff Backend Engineer")
    assert posting["versions"] == [0, 1] and posting["duplicates"] == 1


def test_a_new_source_name_is_another_job():
    async def body(s: Sandbox):
        first = sourced_id(await s.upsert(indeed_job("p1")))
        renamed = sourced_id(
            await s.upsert(indeed_job("p1", metadata__jobSource__sourceName="Example Group"))
        )
        return first, renamed, await s.get("/_sandbox/indeed/jobs", posting_id="p1")

    first, renamed, jobs = scenario(body)
    assert first != renamed and len(jobs["jobs"]) == 2
    assert {j["status"] for j in jobs["jobs"]} == {"live"}  # the first one lives on until expired


def test_refusals_are_per_job_bad_user_input_on_http_200_with_the_jobs_index():
    async def body(s: Sandbox):
        return await s.upsert(
            indeed_job("p1"),
            indeed_job("p2", body__description=None),
            indeed_job("p3", body__location={"country": "DE"}),
        )

    answer = scenario(body)
    assert results(answer) == [results(answer)[0], {"jobPosting": None}, {"jobPosting": None}]
    assert [(e["path"], e["extensions"]["code"]) for e in answer["errors"]] == [
        (["jobsIngest", "createSourcedJobPostings", "results", 1], "BAD_USER_INPUT"),
        (["jobsIngest", "createSourcedJobPostings", "results", 2], "BAD_USER_INPUT"),
    ]
    assert answer["errors"][0]["message"] == "Missing required field: body.description"
    assert (
        answer["errors"][1]["message"]
        == 'cityRegionPostal cannot be null when remote type is not "Fully Remote"'
    )


def test_a_fully_remote_job_needs_no_city():
    async def body(s: Sandbox):
        return await s.upsert(
            indeed_job("p1", body__location={"country": "DE", "remoteType": "FULLY_REMOTE"})
        )

    assert "errors" not in scenario(body)


def test_one_job_twice_in_a_call_is_refused():
    async def body(s: Sandbox):
        return await s.upsert(indeed_job("p1"), indeed_job("p1", body__title="Staff Engineer"))

    answer = scenario(body)
    assert [e["message"] for e in answer["errors"]] == ["The request contains duplicate job entries"] * 2


def test_received_then_live_after_the_indexing_delay_on_the_sandboxs_clock():
    async def body(s: Sandbox):
        await s.put("/_sandbox/indeed/limits", {"indexing_delay_s": 600})
        job = sourced_id(await s.upsert(indeed_job("p1")))
        received = await s.node(job)
        await s.advance_clock(600)
        return received, await s.node(job), await s.node("no-such-job")

    received, live, unknown = scenario(body)
    assert received["status"] == {
        "lifecycleStatus": "PENDING",
        "isRejected": False,
        "isIndeedApplyActive": False,
    }
    assert live["status"]["lifecycleStatus"] == "ACTIVE" and live["status"]["isRejected"] is False
    assert unknown is None


def test_indeed_takes_a_live_job_down_on_its_own():
    async def body(s: Sandbox):
        await s.put("/_sandbox/indeed/limits", {"indexing_delay_s": 60})
        live = sourced_id(await s.upsert(indeed_job("p1")))
        s.t = 60
        taken_down = await s.put(f"/_sandbox/indeed/jobs/{live}/close", {"reason": "policy"})
        return taken_down, await s.node(live), await s.get("/_sandbox/indeed/postings/p1")

    taken_down, node, posting = scenario(body)
    assert taken_down.status_code == 200
    assert taken_down.json()["status"] == "closed_by_board" and taken_down.json()["reason"] == "policy"
    assert node["status"] == {"lifecycleStatus": "INACTIVE", "isRejected": True, "isIndeedApplyActive": False}
    assert posting["status"] == "closed"


def test_a_close_before_indexing_ends_is_a_rejection_and_the_rejection_probability_draws_them():
    async def body(s: Sandbox):
        await s.put("/_sandbox/indeed/limits", {"indexing_delay_s": 60})
        pending = sourced_id(await s.upsert(indeed_job("p1")))
        rejected = await s.put(f"/_sandbox/indeed/jobs/{pending}/close", {"reason": "spam"})
        await s.put("/_sandbox/indeed/limits", {"rejection_probability": 1})
        drawn = sourced_id(await s.upsert(indeed_job("p2")))
        return rejected.json(), await s.node(drawn), await s.get("/_sandbox/indeed/stats")

    rejected, drawn, stats = scenario(body)
    assert rejected["status"] == "rejected" and rejected["reason"] == "spam"
    assert drawn["status"]["isRejected"] is True and drawn["status"]["lifecycleStatus"] == "INACTIVE"
    assert stats["rejected"] == 2


def test_expire_by_sourcedpostingid_stays_expired_and_an_unknown_id_is_that_jobs_error():
    async def body(s: Sandbox):
        job = sourced_id(await s.upsert(indeed_job("p1")))
        expired = await s.expire(job, "p1")
        again = await s.expire(job)
        return expired, again, await s.node(job), await s.get("/_sandbox/indeed/postings/p1")

    expired, again, node, posting = scenario(body)
    keys = results(expired, "expireSourcedJobsBySourcedPostingId")
    assert keys[0]["trackingKey"] and keys[1] == {"trackingKey": None}
    assert expired["errors"][0]["path"][3] == 1  # "p1" is our id, not Indeed's
    assert "errors" not in again
    assert node["status"]["lifecycleStatus"] == "INACTIVE"
    assert (posting["versions"], posting["status"], posting["duplicates"]) == ([0, 1], "closed", 1)


def test_an_upsert_within_30_days_of_expiry_reactivates_the_job_later_makes_a_new_one():
    async def body(s: Sandbox):
        job = sourced_id(await s.upsert(indeed_job("p1")))
        await s.expire(job)
        await s.advance_clock(29 * DAY_S)
        reactivated = sourced_id(await s.upsert(indeed_job("p1")))
        await s.expire(reactivated)
        await s.advance_clock(31 * DAY_S)
        anew = sourced_id(await s.upsert(indeed_job("p1")))
        return job, reactivated, anew, await s.get("/_sandbox/indeed/jobs", posting_id="p1")

    job, reactivated, anew, jobs = scenario(body)
    assert reactivated == job and anew != job
    assert sorted(j["status"] for j in jobs["jobs"]) == ["closed", "live"]


def test_an_unknown_or_expired_token_is_forbidden_on_http_200():
    async def body(s: Sandbox):
        await s.put("/_sandbox/indeed/limits", {"token_ttl_s": 1})
        token = await s.token("indeed")
        s.t = 1
        return await s.graphql(UPSERT, {"input": {"jobPostings": [indeed_job()]}}, token), await s.graphql(
            NODE, {"id": "x"}, "never-issued"
        )

    expired, unknown = scenario(body)
    for answer in (expired, unknown):
        assert answer.status_code == 200
        assert answer.json() == {
            "data": None,
            "errors": [
                {
                    "message": "Client is not authorized.",
                    "extensions": {"code": "FORBIDDEN", "classification": "ValidationError"},
                }
            ],
        }
