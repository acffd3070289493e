"""What the adapters send and what they make of the boards' answers, against a local
aiohttp server that answers as told (no Kafka, milliseconds)."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from aiohttp import web

from consumers.boards.base import (
    BoardDown,
    CallFailed,
    Delivered,
    Rejected,
    Submitted,
    TaskOutcome,
    TaskState,
    Throttled,
    TokenRefused,
    Unsure,
)
from consumers.boards.indeed import IndeedAdapter, IndeedSettings
from consumers.boards.linkedin import LinkedInAdapter, LinkedInSettings
from jobpost_dev.sandbox import MALFORMED_ANSWERS
from listing import indeed_rules, linkedin_rules
from listing.employers import SANDBOX_REGISTRY, Employer, EmployerRegistry, LinkedInIdentity
from schemas.model import Op, Posting
from tests import postings
from tests.unit.consumers.board_server import answering, board, run, update

ACCEPTED = {"status": 202, "id": "urn:li:simpleJobPostingTask:t1"}


def linkedin(url: str, client, employers: EmployerRegistry | None = None) -> LinkedInAdapter:
    return LinkedInAdapter(client, LinkedInSettings(base_url=f"{url}/linkedin"), employers)


def indeed(url: str, client, employers: EmployerRegistry | None = None) -> IndeedAdapter:
    return IndeedAdapter(client, IndeedSettings(base_url=f"{url}/indeed"), employers)


def send(kind: str, handler, updates, employers: EmployerRegistry | None = None):
    """What the adapter of `kind` makes of `handler`'s answers to `updates`, and what it sent."""

    async def scenario():
        async with board(handler) as b:
            adapter = (linkedin if kind == "linkedin" else indeed)(b.url, b.client, employers)
            return await adapter.send(updates, "the-token"), b.seen

    return run(scenario())


def test_linkedin_is_sent_each_job_with_what_linkedin_requires():
    lyon = postings.posting(5)
    created = update("p1", 0, Op.CREATED, posting=lyon)
    # A record written before postings named their locations.
    closed = update("p2", 3, Op.DELETED, posting=Posting("Engineer", "Builds things"))
    outcomes, seen = send("linkedin", answering({"elements": [ACCEPTED, ACCEPTED]}), [created, closed])
    assert outcomes == [Submitted("urn:li:simpleJobPostingTask:t1")] * 2
    (call,) = seen
    assert (call.method, call.path) == ("POST", "/linkedin/rest/simpleJobPostings")
    assert call.headers["Authorization"] == "Bearer the-token"
    assert call.headers["x-restli-method"] == "batch_create"
    assert call.headers["LinkedIn-Version"] == "202604"
    assert call.headers["Idempotency-Key"] == "p1:0, p2:3"
    first, second = call.json()["elements"]
    assert first == {
        "integrationContext": "urn:li:organization:1",
        "companyApplyUrl": lyon.apply_url,
        "externalJobPostingId": "p1",
        "jobPostingOperationType": "CREATE",
        "title": lyon.title,
        "description": lyon.description,
        "listedAt": 1_700_000_000_000,
        "location": "Lyon, Auvergne-Rhône-Alpes, FR",
        "listingType": "BASIC",
    }
    # A record without a location or apply URL takes its employer's; a delete closes.
    assert second["jobPostingOperationType"] == "CLOSE"
    assert (second["location"], second["companyApplyUrl"]) == (
        "San Francisco, California",
        "https://careers.example.com/jobs",
    )


def test_linkedin_gives_each_element_its_own_outcome_in_order():
    answer = {
        "elements": [
            ACCEPTED,
            {"status": 422, "error": {"message": "ERROR :: /location :: field is required", "status": 422}},
            {"status": 503},
            {"status": 409, "error": {"message": "closed already"}},
            {"unexpected": True},
            {"status": "202"},
        ]
    }
    updates = [update(f"p{i}", 1) for i in range(6)]
    updates[3] = update("p3", 2, Op.DELETED)
    outcomes, _ = send("linkedin", answering(answer), updates)
    assert outcomes[0] == Submitted("urn:li:simpleJobPostingTask:t1")
    assert outcomes[1] == Rejected("linkedin element status 422: ERROR :: /location :: field is required")
    assert isinstance(outcomes[2], Unsure)
    assert outcomes[3] == Delivered()  # a CLOSE of a closed job is done
    assert isinstance(outcomes[4], Unsure) and "nobody can read" in outcomes[4].reason
    assert isinstance(outcomes[5], Unsure) and "without a task id" in outcomes[5].reason


def test_an_employer_the_registry_does_not_know_is_refused_and_never_sent():
    stranger = update("p2", 1, employer="acme")
    outcomes, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [update("p1"), stranger])
    assert outcomes[0] == Submitted("urn:li:simpleJobPostingTask:t1")
    # In the words of the rule the API refuses such a posting with: no server path, no setting.
    (linkedin_problem,) = linkedin_rules.employer_problems("acme", SANDBOX_REGISTRY)
    assert outcomes[1] == Rejected(linkedin_problem.detail)
    assert "'acme'" in outcomes[1].reason and "EMPLOYERS_FILE" not in outcomes[1].reason
    assert [e["externalJobPostingId"] for e in seen[0].json()["elements"]] == ["p1"]
    outcomes, seen = send("indeed", answering({}), [stranger])
    (indeed_problem,) = indeed_rules.employer_problems("acme", SANDBOX_REGISTRY)
    assert outcomes == [Rejected(indeed_problem.detail)]
    assert seen == []


def test_an_employer_without_a_location_is_sent_without_one_for_the_board_to_refuse():
    bare = EmployerRegistry(
        employers={
            "default": Employer(
                company_name="Bare", linkedin=LinkedInIdentity(organization="urn:li:organization:7")
            )
        }
    )
    record = update(posting=Posting("Engineer", "Builds things"))  # from before locations
    _, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [record], bare)
    assert "location" not in seen[0].json()["elements"][0]
    assert "companyApplyUrl" not in seen[0].json()["elements"][0]


@pytest.mark.parametrize("kind", ["linkedin", "indeed"])
@pytest.mark.parametrize(
    ("status", "raised"),
    [
        (401, TokenRefused),
        (403, BoardDown),
        (429, Throttled),
        (408, CallFailed),
        (500, CallFailed),
        (503, CallFailed),
    ],
)
def test_whole_call_statuses(kind, status, raised):
    with pytest.raises(raised) as caught:
        send(kind, answering({"message": "no"}, status=status, **{"Retry-After": "7"}), [update()])
    if raised is Throttled:
        assert caught.value.retry_after_s == 7
    assert f"answered {status}" in str(caught.value)


@pytest.mark.parametrize("kind", ["linkedin", "indeed"])
def test_a_whole_call_4xx_refuses_a_single_element_and_leaves_several_unsure(kind):
    outcomes, _ = send(kind, answering({"message": "bad request"}, status=400), [update()])
    assert isinstance(outcomes[0], Rejected) and "answered 400" in outcomes[0].reason
    outcomes, _ = send(kind, answering({"message": "bad request"}, status=400), [update("a"), update("b")])
    assert all(isinstance(o, Unsure) for o in outcomes) and len(outcomes) == 2


@pytest.mark.parametrize("kind", ["linkedin", "indeed"])
@pytest.mark.parametrize(("body", "content_type"), MALFORMED_ANSWERS)
def test_an_answer_nobody_can_read_fails_the_call_and_is_quoted(kind, body, content_type):
    async def handler(_request):
        return web.Response(status=200, body=body, content_type=content_type)

    with pytest.raises(CallFailed) as caught:
        send(kind, handler, [update()])
    assert "answered 200 with a body that" in str(caught.value)
    assert "'" in str(caught.value)  # the start of what came, quoted


def test_linkedin_answering_another_number_of_elements_fails_the_call():
    with pytest.raises(CallFailed, match="1 element statuses for 2 jobs"):
        send("linkedin", answering({"elements": [ACCEPTED]}), [update("a"), update("b")])


def test_linkedin_tasks_are_asked_for_in_one_get_per_fifty_ids():
    def result(task_id: str) -> dict:
        n = int(task_id.rsplit(":", 1)[1])
        if n % 4 == 0:
            return {"id": task_id, "status": "IN_PROGRESS"}
        if n % 4 == 1:
            return {"id": task_id, "status": "SUCCEEDED", "jobPosting": "urn:li:jobPosting:1"}
        if n % 4 == 2:
            return {"id": task_id, "status": "FAILED", "errorMessage": "Invalid Field: /location"}
        return {"id": task_id, "status": "PROCESSED"}

    async def handler(request: web.Request) -> web.Response:
        ids = request.query.getall("ids")
        return web.json_response({"results": {i: result(i) for i in ids if not i.endswith(":59")}})

    async def scenario():
        async with board(handler) as b:
            ids = [f"urn:li:simpleJobPostingTask:{n}" for n in range(60)]
            return await linkedin(b.url, b.client).confirm(ids, "the-token"), b.seen

    found, seen = run(scenario())
    assert [len([k for k, _ in s.query if k == "ids"]) for s in seen] == [50, 10]
    assert {s.path for s in seen} == {"/linkedin/rest/simpleJobPostingTasks"}
    assert found["urn:li:simpleJobPostingTask:0"] == TaskOutcome(TaskState.IN_PROGRESS)
    assert found["urn:li:simpleJobPostingTask:1"] == TaskOutcome(TaskState.SUCCEEDED)
    assert found["urn:li:simpleJobPostingTask:2"] == TaskOutcome(TaskState.FAILED, "Invalid Field: /location")
    assert found["urn:li:simpleJobPostingTask:3"] == TaskOutcome(TaskState.SUCCEEDED)  # PROCESSED, no error
    assert "urn:li:simpleJobPostingTask:59" not in found  # left out of the answer: still unknown


def test_indeed_is_sent_each_job_with_what_indeed_requires():
    berlin = postings.posting(0)
    outcomes, seen = send("indeed", answering(upserted("s1")), [update()])
    assert outcomes == [Delivered()]
    (call,) = seen
    assert (call.method, call.path) == ("POST", "/indeed/graphql")
    assert call.headers["Authorization"] == "Bearer the-token"
    assert call.headers["Idempotency-Key"] == "p1:1"
    sent = call.json()
    assert "createSourcedJobPostings" in sent["query"]
    assert sent["variables"]["input"] == {
        "jobPostings": [
            {
                "body": {
                    "title": berlin.title,
                    "description": berlin.description,
                    "location": {"country": "DE", "cityRegionPostal": "Berlin, Berlin 10115"},
                    "benefits": [],
                },
                "metadata": {
                    "jobSource": {
                        "companyName": "jobpost sandbox employer",
                        "sourceName": "jobpost sandbox employer",
                        "sourceType": "Employer",
                        "employerIds": [{"type": "JOBPOST_EMPLOYER_ID", "id": "default"}],
                    },
                    "jobPostingId": "p1",
                    "datePublished": "2023-11-14T22:13:20.000Z",
                    "url": berlin.apply_url,
                },
            }
        ]
    }


def test_indeed_is_sent_a_record_from_before_locations_at_its_employers_place():
    _, seen = send(
        "indeed", answering(upserted("s1")), [update(posting=Posting("Engineer", "Builds things"))]
    )
    (job,) = seen[0].json()["variables"]["input"]["jobPostings"]
    assert job["body"]["location"] == {"country": "US", "cityRegionPostal": "San Francisco, California"}
    assert job["metadata"]["url"] == "https://careers.example.com/jobs"


def upserted(*ids: str | None) -> dict:
    results = [{"jobPosting": None if i is None else {"sourcedPostingId": i}} for i in ids]
    return {"data": {"jobsIngest": {"createSourcedJobPostings": {"results": results}}}}


def error(code: str, index: int | None = None, field: str = "createSourcedJobPostings") -> dict:
    found = {"message": f"{code} here", "extensions": {"code": code}}
    if index is not None:
        found["path"] = ["jobsIngest", field, "results", index, "jobPosting"]
    return found


def test_indeed_gives_each_job_its_own_outcome_from_the_errors_paths():
    answer = {
        **upserted("s0", None, None, None),
        "errors": [error("BAD_USER_INPUT", 1), error("INTERNAL_SERVER_ERROR", 2)],
    }
    outcomes, _ = send("indeed", answering(answer), [update(f"p{i}") for i in range(4)])
    assert outcomes[0] == Delivered()
    assert outcomes[1] == Rejected("indeed errors ['BAD_USER_INPUT']: BAD_USER_INPUT here")
    assert isinstance(outcomes[2], Unsure) and "INTERNAL_SERVER_ERROR" in outcomes[2].reason
    assert isinstance(outcomes[3], Unsure) and "no result and no error" in outcomes[3].reason


def test_indeed_closes_by_upserting_then_expiring_the_id_the_upsert_gave():
    expired = {
        "data": {"jobsIngest": {"expireSourcedJobsBySourcedPostingId": {"results": [{"trackingKey": "k"}]}}}
    }
    updates = [update("p1", 1), update("p2", 4, Op.DELETED)]
    outcomes, seen = send("indeed", answering(upserted("s1", "s2"), expired), updates)
    assert outcomes == [Delivered(), Delivered()]
    upsert, expire = seen
    assert upsert.headers["Idempotency-Key"] == "p1:1, p2:4"
    assert [j["metadata"]["jobPostingId"] for j in upsert.json()["variables"]["input"]["jobPostings"]] == [
        "p1",
        "p2",
    ]
    assert "expireSourcedJobsBySourcedPostingId" in expire.json()["query"]
    assert expire.json()["variables"]["input"] == {"jobs": [{"sourcedPostingId": "s2"}]}
    assert expire.headers["Idempotency-Key"] == "p2:4"


def test_an_indeed_close_whose_upsert_is_refused_is_refused_saying_why():
    answer = {**upserted("s1", None), "errors": [error("BAD_USER_INPUT", 1)]}
    outcomes, seen = send("indeed", answering(answer), [update("p1"), update("p2", 4, Op.DELETED)])
    assert outcomes[0] == Delivered()
    assert isinstance(outcomes[1], Rejected) and "sourcedPostingId" in outcomes[1].reason
    assert len(seen) == 1  # nothing to expire


def test_an_indeed_expire_call_that_fails_leaves_the_upserts_delivered_and_the_close_unsure():
    async def handler(request: web.Request) -> web.Response:
        if "expireSourcedJobsBySourcedPostingId" in (await request.json())["query"]:
            return web.json_response({"errors": [error("INTERNAL_SERVER_ERROR")]}, status=503)
        return web.json_response(upserted("s1", "s2"))

    outcomes, _ = send("indeed", handler, [update("p1"), update("p2", 4, Op.DELETED)])
    assert outcomes[0] == Delivered()
    assert isinstance(outcomes[1], Unsure) and "the expire call" in outcomes[1].reason


@pytest.mark.parametrize(("code", "raised"), [("FORBIDDEN", TokenRefused), ("UNAUTHENTICATED", TokenRefused)])
def test_indeed_refusing_the_client_for_the_whole_call_is_a_token_refusal(code, raised):
    with pytest.raises(raised):
        send("indeed", answering({"data": None, "errors": [error(code)]}), [update()])


def test_indeed_whole_call_errors():
    refused = {"data": None, "errors": [error("BAD_USER_INPUT")]}
    assert isinstance(send("indeed", answering(refused), [update()])[0][0], Rejected)
    assert all(
        isinstance(o, Unsure) for o in send("indeed", answering(refused), [update("a"), update("b")])[0]
    )
    with pytest.raises(CallFailed):
        send("indeed", answering({"data": None, "errors": [error("INTERNAL_SERVER_ERROR")]}), [update()])


def test_a_board_that_is_not_there_is_down():
    async def scenario(kind: str):
        async with board(answering({})) as b:
            url = b.url  # the server stops with the block: nothing listens there any more
        async with aiohttp.ClientSession() as client:
            await (linkedin if kind == "linkedin" else indeed)(url, client).send([update()], "the-token")

    for kind in ("linkedin", "indeed"):
        with pytest.raises(BoardDown, match="ClientConnectorError"):
            run(scenario(kind))


def test_a_reset_before_any_answer_is_the_board_down_and_a_broken_answer_a_failed_call():
    async def reset(request: web.Request) -> web.Response:
        request.transport.abort()  # type: ignore[union-attr]
        await asyncio.sleep(1)
        return web.Response()

    async def broken(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Length": "1000"})
        await response.prepare(request)
        await response.write(b'{"elements": [')
        request.transport.abort()  # type: ignore[union-attr]
        return response

    with pytest.raises(BoardDown):
        send("linkedin", reset, [update()])
    with pytest.raises(CallFailed, match="broke off"):
        send("linkedin", broken, [update()])


def test_no_answer_in_time_is_a_failed_call():
    async def slow(_request: web.Request) -> web.Response:
        await asyncio.sleep(5)
        return web.Response()

    async def scenario():
        async with board(slow) as b:
            adapter = IndeedAdapter(
                b.client, IndeedSettings(base_url=f"{b.url}/indeed", timeout_s=0.2), SANDBOX_REGISTRY
            )
            await adapter.send([update()], "the-token")

    with pytest.raises(CallFailed, match=r"no answer within 0\.2 s"):
        run(scenario())
