"""LinkedIn in the sandbox, as its documents describe it: jobs identified by the partner and
`externalJobPostingId`, refusals per element in the call's answer or later in the task, a
repeat judged by LinkedIn's identity (never by `Idempotency-Key`), the job's URN and page,
its listing status, its lifetime and renewal, the closes LinkedIn makes on its own."""

from __future__ import annotations

from typing import Any

from tests.unit.jobpost_dev.sandbox.harness import DAY_S, DESCRIPTION, NOW_MS, Sandbox, element, scenario


async def created(s: Sandbox, posting_id: str = "p1", **changes: Any) -> dict[str, Any]:
    """A CREATE through to its task's end; the task's answer."""
    (answer,) = await s.elements(element(posting_id, **changes))
    assert answer["status"] == 202, answer
    return await s.task(answer["id"])


def test_a_job_is_created_by_its_task_and_gets_linkedins_urn_and_page():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/limits", {"task_delay_s": 300})
        (answer,) = await s.elements(element("p1"))
        during = await s.task(answer["id"])
        listing_during = await s.listing("p1")
        s.t = 300
        return (
            answer,
            during,
            listing_during,
            await s.task(answer["id"]),
            await s.get("/_sandbox/linkedin/jobs"),
        )

    answer, during, listing_during, after, jobs = scenario(body)
    assert answer["status"] == 202 and answer["id"].startswith("urn:li:simpleJobPostingTask:")
    assert during == {"id": answer["id"], "externalJobPostingId": "p1", "status": "IN_PROGRESS"}
    assert listing_during["results"]["p1"]["listingStatus"] == "IN_PROGRESS"
    assert after["status"] == "SUCCEEDED" and after["jobPosting"].startswith("urn:li:jobPosting:")
    (job,) = jobs["jobs"]
    number = after["jobPosting"].removeprefix("urn:li:jobPosting:")
    assert job["id"] == after["jobPosting"] and job["url"] == f"https://www.linkedin.com/jobs/view/{number}"
    assert (job["posting_id"], job["version"], job["status"]) == ("p1", 0, "live")


def test_idempotency_key_means_nothing_a_repeated_create_fails_in_its_task_and_leaves_one_job():
    async def body(s: Sandbox):
        first = await created(s)
        headers = {
            "Authorization": f"Bearer {await s.token('linkedin')}",
            "x-restli-method": "batch_create",
            "LinkedIn-Version": "202604",
            "Idempotency-Key": "p1:0",
        }
        again = await s.http.post(
            "/linkedin/rest/simpleJobPostings", json={"elements": [element("p1")]}, headers=headers
        )
        repeat = await s.task(again.json()["elements"][0]["id"])
        jobs = await s.get("/_sandbox/linkedin/jobs", posting_id="p1")
        return first, repeat, jobs, await s.get("/_sandbox/linkedin/postings/p1")

    first, repeat, jobs, posting = scenario(body)
    number = first["jobPosting"].removeprefix("urn:li:jobPosting:")
    assert repeat["status"] == "FAILED" and "jobPosting" not in repeat
    assert repeat["errorMessage"] == (
        "Job processing failed due to a client-side error. Please check payload and integration setup. "
        "Error details: Trying to create a job with same partnerIdentifier already exists. It is duplicate "
        "creation request for a basic job or a non-draft premium job. Dropping the duplicate job posting "
        f"creation request. LinkedIn job id: {number}, externalJobPostingId: p1"
    )
    assert len(jobs["jobs"]) == 1
    assert (posting["versions"], posting["duplicates"]) == ([0], 1)


def test_an_update_or_renew_of_a_job_never_created_fails_in_its_task_and_a_close_answers_409():
    async def body(s: Sandbox):
        update, renew, close = await s.elements(
            element("u1", "UPDATE"), element("r1", "RENEW"), element("c1", "CLOSE")
        )
        return await s.task(update["id"]), await s.task(renew["id"]), close

    update, renew, close = scenario(body)
    assert update["status"] == renew["status"] == "FAILED"
    not_there = "Operation type `UPDATE` is not allowed for a non-existing job of partner urn urn:li:"
    assert not_there in update["errorMessage"]
    assert "partner job code (`u1`)" in update["errorMessage"]
    assert "Operation type `RENEW` is not allowed for a non-existing job" in renew["errorMessage"]
    assert close == {
        "status": 409,
        "error": {"message": "Cannot close job which is already closed or does not exist", "status": 409},
    }


def test_a_short_description_and_an_unknown_location_fail_in_the_task_with_linkedins_message():
    async def body(s: Sandbox):
        short = await created(s, "p1", description="Builds payment services.")
        nowhere = await created(s, "p2", location="Remote")
        both = await created(s, "p3", description="<p>" + "x" * 99 + "</p>" + "<br>" * 20, location="Berlin")
        return short, nowhere, both, await s.get("/_sandbox/linkedin/jobs")

    short, nowhere, both, jobs = scenario(body)
    assert short["status"] == nowhere["status"] == both["status"] == "FAILED"
    assert short["errorMessage"] == (
        "Job {partner=urn:li:jobPostingPartner:"
        + short["errorMessage"].split("jobPostingPartner:")[1].split(",")[0]
        + ", partnerJobCode=p1} was dropped: true\n\nInvalid Field: /description; Drop Message: "
        "The description length should be at least 100 characters"
    )
    assert nowhere["errorMessage"].endswith(
        "partnerJobCode=p2} was dropped: true\n\nInvalid Field: /city; \nInvalid Field: /postalCode; "
        "\nInvalid Field: /state; \nInvalid Field: /geoLocation; "
    )
    assert "/description;" in both["errorMessage"] and "/city;" in both["errorMessage"]  # tags are not text
    assert jobs["jobs"] == []


def test_a_description_over_25000_characters_fails_in_the_task():
    async def body(s: Sandbox):
        return await created(s, description=DESCRIPTION + "x" * 25_000)

    task = scenario(body)
    assert task["status"] == "FAILED" and "between 100 - 25,000 characters" in task["errorMessage"]


def test_a_remote_job_may_name_its_country_alone_an_on_site_one_may_not():
    async def body(s: Sandbox):
        remote = await created(s, "p1", location="Germany", workplaceTypes=["Remote"])
        on_site = await created(s, "p2", location="Germany")
        remote_state = await created(s, "p3", location="Austin, Texas", workplaceTypes=["remote"])
        return remote, on_site, remote_state

    remote, on_site, remote_state = scenario(body)
    assert remote["status"] == "SUCCEEDED"
    assert (
        on_site["status"] == "FAILED" and remote_state["status"] == "FAILED"
    )  # a remote job names its country


def test_element_checks_answer_in_the_call_each_element_on_its_own():
    async def body(s: Sandbox):
        return await s.elements(
            element("p1"),
            element("p2", title=None),
            element("p3", integrationContext=None),
            element("p4", workplaceTypes=["On-site", "Remote"]),
            element("p5", alternateLocations=["Austin"] * 8),
            element("p6", jobPostingOperationType="UPDATED"),
            element("p7", listedAt=NOW_MS + 3_600_000),
            element("p8", companyApplyUrl="careers page"),
            element("p9", employmentStatus="FULLTIME"),
            element("x" * 76),
            element("p10", listedAt="yesterday"),
        )

    answers = scenario(body)
    statuses = [a["status"] for a in answers]
    assert statuses == [202, 422, 400, 400, 422, 422, 422, 400, 422, 422, 422]
    messages = [a["error"]["message"] for a in answers[1:]]
    assert messages[0] == "ERROR :: /title :: field is required but not found and has no default value\n"
    assert messages[1] == "Either context or company or companyPageUrl or companyName must be provided"
    assert messages[2] == (
        "The workplaceTypes field cannot have more than one value provided. "
        "Provided values ['On-site', 'Remote']"
    )
    assert messages[3] == (
        "The job contains more than seven locations. Please ensure maximum seven locations per job"
    )
    assert messages[4] == 'ERROR :: /jobPostingOperationType :: "UPDATED" is not an enum symbol\n'
    assert answers[6]["error"]["code"] == "ERROR_INVALID_LISTED_AT_FIELD"
    assert messages[6].startswith(
        "Invalid company apply url for job with externalPartnerId p8, taskUrn urn:li:"
    )
    assert messages[7] == 'ERROR :: /employmentStatus :: "FULLTIME" is not an enum symbol\n'
    assert messages[9] == "ERROR :: /listedAt :: yesterday cannot be coerced to Long\n"


def test_two_elements_for_one_job_in_one_call_are_both_refused():
    async def body(s: Sandbox):
        return await s.elements(element("p1"), element("p2"), element("p1", title="Staff Engineer"))

    answers = scenario(body)
    assert [a["status"] for a in answers] == [422, 202, 422]


def test_the_call_needs_linkedins_method_header():
    async def body(s: Sandbox):
        headers = {"Authorization": f"Bearer {await s.token('linkedin')}", "LinkedIn-Version": "202604"}
        return await s.http.post(
            "/linkedin/rest/simpleJobPostings", json={"elements": [element()]}, headers=headers
        )

    answer = scenario(body)
    assert answer.status_code == 403
    assert answer.json()["message"] == "Not enough permissions to access: POST /simpleJobPostings"


def test_an_update_applies_new_content_and_the_same_content_again_is_a_repeat():
    async def body(s: Sandbox):
        await created(s)
        (changed,) = await s.elements(element("p1", "UPDATE", title="Staff Backend Engineer, Payments"))
        (same,) = await s.elements(element("p1", "UPDATE", title="Staff Backend Engineer, Payments"))
        (close,) = await s.elements(element("p1", "CLOSE", title="Staff Backend Engineer, Payments"))
        (again,) = await s.elements(element("p1", "CLOSE", title="Staff Backend Engineer, Payments"))
        tasks = [await s.task(t["id"]) for t in (changed, same, close)]
        return tasks, again, await s.get("/_sandbox/linkedin/postings/p1"), await s.listing("p1")

    tasks, again, posting, listing = scenario(body)
    assert [t["status"] for t in tasks] == ["SUCCEEDED"] * 3
    assert again["status"] == 409
    assert posting["versions"] == [0, 1, 2] and posting["status"] == "closed"
    assert posting["duplicates"] == 2  # the same update, the second close
    assert [entry["state"] for entry in posting["log"]] == ["SUCCEEDED"] * 4 + ["REFUSED"]
    found = listing["results"]["p1"]
    assert found["listingStatus"] == "NOT_LISTED" and "jobPostingUrl" not in found
    assert found["listingStatusDetail"]["statusMessage"] == "This job was closed by original poster."


def test_a_job_is_known_per_partner_and_externaljobpostingid_and_a_closed_one_cannot_be_updated():
    async def body(s: Sandbox):
        await created(s)
        await s.elements(element("p1", "CLOSE"))
        (update,) = await s.elements(element("p1", "UPDATE", title="Staff Engineer"))
        (create,) = await s.elements(element("p1", "CREATE", title="Staff Engineer"))
        return await s.task(update["id"]), await s.task(create["id"])

    update, create = scenario(body)
    assert update["status"] == "FAILED" and "not allowed for a closed job" in update["errorMessage"]
    assert create["status"] == "FAILED" and "same partnerIdentifier already exists" in create["errorMessage"]


def test_the_status_api_lists_a_live_job_with_its_url_and_says_nothing_of_an_unknown_one():
    async def body(s: Sandbox):
        task = await created(s)
        return task, await s.listing("p1", "never")

    task, listing = scenario(body)
    found = listing["results"]["p1"]
    number = task["jobPosting"].removeprefix("urn:li:jobPosting:")
    assert found["listingStatus"] == "LISTED"
    assert found["jobPostingUrl"] == f"https://www.linkedin.com/jobs/view/{number}"
    assert found["jobPostingInfo"]["listedAt"] == NOW_MS - 60_000
    assert found["jobPostingInfo"]["expireAt"] == NOW_MS - 60_000 + 180 * DAY_S * 1000
    assert listing["errors"]["never"]["status"] == 404 and "never" not in listing["results"]


def test_linkedin_closes_a_job_on_its_own_with_its_reason():
    async def body(s: Sandbox):
        task = await created(s)
        closed = await s.put(
            f"/_sandbox/linkedin/jobs/{task['jobPosting']}/close", {"reason": "MEMBER_REPORTED"}
        )
        twice = await s.put(
            f"/_sandbox/linkedin/jobs/{task['jobPosting']}/close", {"reason": "MEMBER_REPORTED"}
        )
        unknown = await s.put("/_sandbox/linkedin/jobs/urn:li:jobPosting:1/close", {"reason": "SPAM"})
        return closed, twice, unknown, await s.listing("p1"), await s.get("/_sandbox/linkedin/postings/p1")

    closed, twice, unknown, listing, posting = scenario(body)
    assert closed.status_code == 200 and closed.json()["status"] == "closed_by_board"
    assert closed.json()["reason"] == "MEMBER_REPORTED"
    assert (twice.status_code, unknown.status_code) == (409, 404)
    detail = listing["results"]["p1"]["listingStatusDetail"]
    assert listing["results"]["p1"]["listingStatus"] == "NOT_LISTED"
    assert detail == {
        "errorCode": "MEMBER_REPORTED",
        "errorType": "LINKEDIN_ERROR",
        "statusMessage": "LinkedIn automatically closes jobs that are reported multiple times",
    }
    assert posting["status"] == "closed" and posting["versions"] == [0]


def test_a_job_expires_180_days_after_listedat_unless_renewed_each_renew_adding_30_days():
    async def body(s: Sandbox):
        await created(s, "p1")
        await created(s, "p2")
        await s.advance_clock(170 * DAY_S)
        (renew,) = await s.elements(element("p2", "RENEW"))
        renewed = await s.task(renew["id"])
        await s.advance_clock(15 * DAY_S)
        jobs = {j["posting_id"]: j for j in (await s.get("/_sandbox/linkedin/jobs"))["jobs"]}
        listing = await s.listing("p1", "p2")
        (late,) = await s.elements(element("p1", "RENEW"))
        return renewed, jobs, listing, await s.task(late["id"])

    renewed, jobs, listing, late = scenario(body)
    assert renewed["status"] == "SUCCEEDED"
    assert jobs["p1"]["status"] == "expired" and jobs["p2"]["status"] == "live"
    assert jobs["p2"]["expires_at"] == NOW_MS - 60_000 + 210 * DAY_S * 1000
    assert listing["results"]["p1"]["listingStatus"] == "NOT_LISTED"
    assert listing["results"]["p2"]["listingStatus"] == "LISTED"
    assert late["status"] == "FAILED"  # a RENEW extends a listed job only


def test_task_ids_are_valid_for_24_hours():
    async def body(s: Sandbox):
        (answer,) = await s.elements(element())
        await s.advance_clock(DAY_S)
        return answer["id"], await s.tasks(answer["id"])

    task_id, found = scenario(body)
    assert task_id not in found["results"] and found["errors"][task_id]["status"] == 404


def test_tasks_end_in_the_order_of_their_end_times_so_overlapping_versions_may_swap():
    async def body(s: Sandbox):
        await created(s)
        await s.put("/_sandbox/linkedin/limits", {"task_delay_s": 5})
        await s.elements(element("p1", "UPDATE", title="Senior Backend Engineer"))
        s.t = 1
        await s.put("/_sandbox/linkedin/limits", {"task_delay_s": 1})
        await s.elements(element("p1", "UPDATE", title="Staff Backend Engineer"))
        s.t = 10
        return await s.get("/_sandbox/linkedin/postings/p1"), await s.get("/_sandbox/linkedin/jobs")

    posting, jobs = scenario(body)
    assert posting["versions"] == [0, 2, 1]  # why a consumer waits for a task before the next version
    assert jobs["jobs"][0]["title"] == "Senior Backend Engineer"


def test_the_fail_probability_fails_tasks_with_linkedins_catch_all_message():
    async def body(s: Sandbox):
        await s.put("/_sandbox/linkedin/limits", {"task_fail_probability": 1})
        return await created(s), await s.get("/_sandbox/linkedin/stats")

    task, stats = scenario(body)
    assert task["status"] == "FAILED" and "catch-all error" in task["errorMessage"]
    assert stats["failed_tasks"] == 1
