"""What the adapters send and what they make of the boards' answers, against a local
aiohttp server that answers as told (no Kafka, milliseconds)."""

from __future__ import annotations

import asyncio
import dataclasses
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web

from consumers.boards.base import (
    BoardDown,
    BoardListing,
    CallFailed,
    Delivered,
    JobAction,
    JobRef,
    Operation,
    Rejected,
    Submitted,
    TaskFailure,
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
from schemas.enums import DescriptionFormat, EmploymentType, ListingStatus, SalaryPeriod, Workplace
from schemas.model import Op, Posting, PostingLocation, Salary
from tests import postings
from tests.unit.consumers.board_server import action, answering, board, run, update

# A record from before `locations` (schema v1-v3): free text, no apply URL.
OLD = Posting(
    "Engineer",
    "Builds the services that move every order and payment, in a small team that ships every week "
    "and owns what it ships.",
)

ACCEPTED = {"status": 202, "id": "urn:li:simpleJobPostingTask:t1"}


def linkedin(url: str, client, employers: EmployerRegistry | None = None) -> LinkedInAdapter:
    return LinkedInAdapter(client, LinkedInSettings(base_url=f"{url}/linkedin"), employers)


def indeed(url: str, client, employers: EmployerRegistry | None = None) -> IndeedAdapter:
    return IndeedAdapter(client, IndeedSettings(base_url=f"{url}/indeed"), employers)


def send(kind: str, handler, updates, employers: EmployerRegistry | None = None):
    """What the adapter of `kind` makes of `handler`'s answers to `updates` (each a
    `JobAction`, or a `PostingUpdate` asked as a lane would: `board_server.action`), and what
    it sent."""
    actions = [u if isinstance(u, JobAction) else action(u) for u in updates]

    async def scenario():
        async with board(handler) as b:
            adapter = (linkedin if kind == "linkedin" else indeed)(b.url, b.client, employers)
            return await adapter.send(actions, "the-token"), b.seen

    return run(scenario())


def test_linkedin_is_sent_each_job_with_what_linkedin_requires():
    lyon = postings.posting(5)
    created = update("p1", 0, Op.CREATED, posting=lyon)
    # A record written before postings named their locations.
    closed = update("p2", 3, Op.DELETED, posting=OLD)
    outcomes, seen = send(
        "linkedin",
        answering({"elements": [ACCEPTED, ACCEPTED]}),
        [action(created, listed_at=1_600_000_000_000), closed],
    )
    assert outcomes == [Submitted("urn:li:simpleJobPostingTask:t1")] * 2
    (call,) = seen
    assert (call.method, call.path) == ("POST", "/linkedin/rest/simpleJobPostings")
    assert call.headers["Authorization"] == "Bearer the-token"
    assert call.headers["x-restli-method"] == "batch_create"
    assert call.headers["LinkedIn-Version"] == "202604"
    assert "Idempotency-Key" not in call.headers  # LinkedIn reads none: its own identity of a job decides
    first, second = call.json()["elements"]
    assert first == {
        "integrationContext": "urn:li:organization:1",
        "companyApplyUrl": lyon.apply_url,
        "externalJobPostingId": "p1",
        "jobPostingOperationType": "CREATE",
        "title": lyon.title,
        "description": lyon.description,
        "listedAt": 1_600_000_000_000,  # the job's first listing date, as the lane keeps it
        "location": "Lyon, Auvergne-Rhône-Alpes, FR",
        "workplaceTypes": ["On-site"],
        "employmentStatus": "PART_TIME",
        "listingType": "BASIC",
    }
    # A record without a location or apply URL takes its employer's; a delete closes.
    assert second["jobPostingOperationType"] == "CLOSE"
    assert (second["location"], second["companyApplyUrl"]) == (
        "San Francisco, California",
        "https://careers.example.com/jobs",
    )


def test_linkedin_maps_every_field_of_a_posting():
    posting = postings.posting(
        3,
        description="<h2>About</h2><p>Build <em>fast</em> <b>services</b></p><ol><li>Python</li></ol>"
        + "x" * 100,
        description_format=DescriptionFormat.HTML,
        locations=(
            PostingLocation("US", "Austin", "Texas", "78701"),
            PostingLocation("US", "Denver", "Colorado"),
            PostingLocation("DE", "Berlin"),
            PostingLocation("NL", postal_code="1012"),
        ),
        workplace=Workplace.HYBRID,
        employment_type=EmploymentType.CONTRACT,
        salary=Salary(120_000.0, "USD", SalaryPeriod.YEAR, 150_000.5),
    )
    _, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [update(posting=posting)])
    (element,) = seen[0].json()["elements"]
    assert element["location"] == "Austin, Texas, US"
    assert element["alternateLocations"] == ["Denver", "Berlin, DE", "1012, NL"]
    assert element["workplaceTypes"] == ["Hybrid"]
    assert element["employmentStatus"] == "CONTRACT"
    assert element["description"] == "About<p>Build fast <b>services</b></p><li>Python</li>" + "x" * 100
    assert element["compensation"] == {
        "compensations": [
            {
                "type": "BASE_SALARY",
                "period": "YEARLY",
                "value": {
                    "range": {
                        "start": {"currencyCode": "USD", "amount": "120000.00"},
                        "end": {"currencyCode": "USD", "amount": "150000.50"},
                    }
                },
            }
        ]
    }
    remote = postings.posting(4)  # remote within a country
    _, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [update(posting=remote)])
    (element,) = seen[0].json()["elements"]
    assert (element["location"], element["workplaceTypes"]) == (remote.locations[0].country, ["Remote"])


def test_what_the_shared_rules_refuse_is_never_sent_to_linkedin():
    short = update(posting=postings.posting(0, description="Work"))
    outcomes, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [short])
    (problem,) = linkedin_rules.problems(short.posting, "default", SANDBOX_REGISTRY)
    assert isinstance(outcomes[0], Rejected) and problem.detail in outcomes[0].reason
    assert "too_short at /description" in outcomes[0].reason
    assert seen == []


def test_linkedin_renews_and_closes_restating_the_content_the_job_holds():
    held = update("p1", 2)
    renew = action(held, Operation.RENEW, "urn:li:jobPosting:9", 1_600_000_000_000)
    close = action(update("p2", 2), Operation.CLOSE, "urn:li:jobPosting:8", 1_600_000_000_000)
    _, seen = send("linkedin", answering({"elements": [ACCEPTED, ACCEPTED]}), [renew, close])
    first, second = seen[0].json()["elements"]
    assert (first["jobPostingOperationType"], first["title"], first["listedAt"]) == (
        "RENEW",
        held.posting.title,
        1_600_000_000_000,
    )
    assert second["jobPostingOperationType"] == "CLOSE" and second["description"]


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
    assert outcomes[3] == Delivered(gone=True)  # a CLOSE of a closed job is done
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
    record = update("p1", 2, Op.DELETED, posting=OLD)  # from before locations: its close
    _, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [record], bare)
    assert "location" not in seen[0].json()["elements"][0]
    assert "companyApplyUrl" not in seen[0].json()["elements"][0]
    # Its content, which the shared rules refuse (no apply URL): never sent.
    outcomes, seen = send("linkedin", answering({"elements": [ACCEPTED]}), [update(posting=OLD)], bare)
    assert isinstance(outcomes[0], Rejected) and "companyApplyUrl" in outcomes[0].reason and seen == []


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
        return {"id": task_id, "status": "PROCESSED", "jobPosting": "urn:li:jobPosting:3"}

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
    assert found["urn:li:simpleJobPostingTask:1"] == TaskOutcome(
        TaskState.SUCCEEDED, job_id="urn:li:jobPosting:1"
    )
    assert found["urn:li:simpleJobPostingTask:2"] == TaskOutcome(TaskState.FAILED, "Invalid Field: /location")
    assert found["urn:li:simpleJobPostingTask:3"] == TaskOutcome(
        TaskState.SUCCEEDED, job_id="urn:li:jobPosting:3"
    )  # PROCESSED, no error
    assert "urn:li:simpleJobPostingTask:59" not in found  # left out of the answer: still unknown


def test_linkedin_task_failures_say_what_they_say_of_the_job():
    duplicate = (
        "Job processing failed due to a client-side error. Please check payload and integration setup. "
        "Error details: Trying to create a job with same partnerIdentifier already exists. It is duplicate "
        "creation request for a basic job or a non-draft premium job. Dropping the duplicate job posting "
        "creation request. LinkedIn job id: 4200000007, externalJobPostingId: p1"
    )
    missing = (
        "Job processing failed due to a client-side error. Please check payload and integration setup. "
        "Error details: Operation type `UPDATE` is not allowed for a non-existing job of partner urn "
        "urn:li:jobPostingPartner:1, partner job code (`p1`)"
    )
    closed = missing.replace("non-existing", "closed")

    async def handler(request: web.Request) -> web.Response:
        errors = dict(zip(request.query.getall("ids"), (duplicate, missing, closed), strict=True))
        return web.json_response(
            {"results": {i: {"id": i, "status": "FAILED", "errorMessage": e} for i, e in errors.items()}}
        )

    async def scenario():
        async with board(handler) as b:
            return await linkedin(b.url, b.client).confirm(["t:1", "t:2", "t:3"], "the-token")

    found = run(scenario())
    assert found["t:1"] == TaskOutcome(
        TaskState.FAILED, duplicate, "urn:li:jobPosting:4200000007", TaskFailure.JOB_EXISTS
    )
    assert found["t:2"] == TaskOutcome(TaskState.FAILED, missing, failure=TaskFailure.NO_JOB)
    assert found["t:3"] == TaskOutcome(TaskState.FAILED, closed, failure=TaskFailure.JOB_CLOSED)


def test_linkedin_job_posting_statuses_are_read_by_external_id_within_the_query_limit():
    listed = {
        "externalJobPostingId": "x",
        "listingStatus": "LISTED",
        "jobPostingUrl": "https://www.linkedin.com/jobs/view/4200000001",
        "jobPostingInfo": {"listedAt": 1_600_000_000_000, "expireAt": 1_615_552_000_000},
    }
    closed = {
        "listingStatus": "NOT_LISTED",
        "listingStatusDetail": {
            "errorCode": "MEMBER_REPORTED",
            "errorType": "LINKEDIN_ERROR",
            "statusMessage": "LinkedIn automatically closes jobs that are reported multiple times",
        },
    }
    expired = {
        "listingStatus": "NOT_LISTED",
        "listingStatusDetail": {
            "errorCode": "EXPIRED",
            "errorType": "LINKEDIN_ERROR",
            "statusMessage": "gone",
        },
    }
    answers = [listed, closed, expired, {"listingStatus": "IN_PROGRESS"}]

    async def handler(request: web.Request) -> web.Response:
        ids = request.query.getall("ids")
        return web.json_response(
            {"results": {i: answers[int(i[-3:]) % 5] for i in ids if int(i[-3:]) % 5 < 4}}
        )

    jobs = [JobRef(f"{'p' * 70}{n:03d}", None) for n in range(120)]  # 75 characters each

    async def scenario():
        async with board(handler) as b:
            return await linkedin(b.url, b.client).listings(jobs, "the-token"), b.seen

    found, seen = run(scenario())
    assert all(len(urlencode(s.query)) <= 4000 for s in seen) and len(seen) == 3  # 4 KB a query: 50 ids
    assert {s.path for s in seen} == {"/linkedin/v2/jobPostingStatus"}
    assert found[jobs[0].posting_id] == BoardListing(
        ListingStatus.LIVE,
        "https://www.linkedin.com/jobs/view/4200000001",
        None,
        1_600_000_000_000,
        1_615_552_000_000,
    )
    assert found[jobs[1].posting_id] == BoardListing(
        ListingStatus.CLOSED_BY_BOARD,
        reason="LinkedIn automatically closes jobs that are reported multiple times",
    )
    assert found[jobs[2].posting_id].status == ListingStatus.EXPIRED
    assert found[jobs[3].posting_id] == BoardListing(None)
    assert jobs[4].posting_id not in found  # not in the answer: unknown


def test_indeed_is_sent_each_job_with_what_indeed_requires():
    berlin = postings.posting(0)
    outcomes, seen = send(
        "indeed", answering(upserted("s1")), [action(update(), listed_at=1_600_000_000_000)]
    )
    assert outcomes == [Delivered("s1")]
    (call,) = seen
    assert (call.method, call.path) == ("POST", "/indeed/graphql")
    assert call.headers["Authorization"] == "Bearer the-token"
    assert "Idempotency-Key" not in call.headers  # Indeed reads none: its upsert is the same job
    sent = call.json()
    assert "createSourcedJobPostings" in sent["query"]
    assert sent["variables"]["input"] == {
        "jobPostings": [
            {
                "body": {
                    "title": berlin.title,
                    "description": berlin.description,
                    "descriptionFormatting": "TEXT",
                    "location": {"country": "DE", "cityRegionPostal": "Berlin, Berlin 10115"},
                    "benefits": [],
                    "salary": {
                        "currency": "EUR",
                        "minimumMinor": 5_500_000,
                        "maximumMinor": 7_500_000,
                        "period": "YEAR",
                    },
                },
                "metadata": {
                    "jobSource": {
                        "companyName": "jobpost sandbox employer",
                        "sourceName": "jobpost sandbox employer",
                        "sourceType": "Employer",
                        "employerIds": [{"type": "JOBPOST_EMPLOYER_ID", "id": "default"}],
                    },
                    "jobPostingId": "p1",
                    "jobTypes": ["Full-time"],
                    "datePublished": "2020-09-13T12:26:40.000Z",  # the first listing date
                    "url": berlin.apply_url,
                },
            }
        ]
    }


def test_indeed_is_sent_html_with_its_formatting_flag_and_a_remote_job_as_fully_remote():
    posting = postings.posting(
        4,
        description="<h2>About</h2><p>Build <u>fast</u> <em>services</em></p>",
        description_format=DescriptionFormat.HTML,
    )
    _, seen = send("indeed", answering(upserted("s1")), [update(posting=posting)])
    (job,) = seen[0].json()["variables"]["input"]["jobPostings"]
    assert job["body"]["descriptionFormatting"] == "RICH_FORMATTING"
    assert job["body"]["description"] == "<h2>About</h2><p>Build fast <em>services</em></p>"
    assert job["body"]["location"] == {"country": posting.locations[0].country, "remoteType": "FULLY_REMOTE"}


def test_indeed_is_sent_a_record_from_before_locations_at_its_employers_place():
    _, seen = send("indeed", answering(upserted("s1")), [update(posting=OLD)])
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
    assert outcomes[0] == Delivered("s0")
    assert outcomes[1] == Rejected("indeed errors ['BAD_USER_INPUT']: BAD_USER_INPUT here")
    assert isinstance(outcomes[2], Unsure) and "INTERNAL_SERVER_ERROR" in outcomes[2].reason
    assert isinstance(outcomes[3], Unsure) and "no result and no error" in outcomes[3].reason


def test_indeed_expires_a_job_by_the_id_kept_from_its_upsert():
    expired = {
        "data": {"jobsIngest": {"expireSourcedJobsBySourcedPostingId": {"results": [{"trackingKey": "k"}]}}}
    }
    # The employer's sourceName changed since: the id still names the job.
    close = JobAction(Operation.CLOSE, "p2", "default", None, "s2-kept")
    outcomes, seen = send("indeed", answering(upserted("s1"), expired), [update("p1", 1), close])
    assert outcomes == [Delivered("s1"), Delivered()]
    upsert, expire = seen
    assert [j["metadata"]["jobPostingId"] for j in upsert.json()["variables"]["input"]["jobPostings"]] == [
        "p1"
    ]
    assert "expireSourcedJobsBySourcedPostingId" in expire.json()["query"]
    assert expire.json()["variables"]["input"] == {"jobs": [{"sourcedPostingId": "s2-kept"}]}
    outcomes, seen = send("indeed", answering(expired), [close])
    assert outcomes == [Delivered()] and len(seen) == 1  # no upsert needed at all


def test_expiring_a_job_indeed_no_longer_knows_is_done():
    gone = {
        "data": {"jobsIngest": {"expireSourcedJobsBySourcedPostingId": {"results": [{"trackingKey": None}]}}},
        "errors": [
            {
                "message": "No job has sourcedPostingId 's9'",
                "extensions": {"code": "BAD_USER_INPUT"},
                "path": ["jobsIngest", "expireSourcedJobsBySourcedPostingId", "results", 0],
            }
        ],
    }
    outcomes, _ = send("indeed", answering(gone), [JobAction(Operation.CLOSE, "p9", "default", None, "s9")])
    assert outcomes == [Delivered(gone=True)]


def test_a_job_whose_id_was_never_kept_is_upserted_to_learn_it_then_expired():
    expired = {
        "data": {"jobsIngest": {"expireSourcedJobsBySourcedPostingId": {"results": [{"trackingKey": "k"}]}}}
    }
    updates = [update("p1", 1), update("p2", 4, Op.DELETED)]  # a state from before v3 kept no id
    outcomes, seen = send("indeed", answering(upserted("s1", "s2"), expired), updates)
    assert outcomes == [Delivered("s1"), Delivered()]
    _, expire = seen
    assert expire.json()["variables"]["input"] == {"jobs": [{"sourcedPostingId": "s2"}]}


def test_an_indeed_close_whose_upsert_is_refused_is_refused_saying_why():
    answer = {**upserted("s1", None), "errors": [error("BAD_USER_INPUT", 1)]}
    outcomes, seen = send("indeed", answering(answer), [update("p1"), update("p2", 4, Op.DELETED)])
    assert outcomes[0] == Delivered("s1")
    assert isinstance(outcomes[1], Rejected) and "sourcedPostingId" in outcomes[1].reason
    assert len(seen) == 1  # nothing to expire


def test_an_indeed_expire_call_that_fails_leaves_the_upserts_delivered_and_the_close_unsure():
    async def handler(request: web.Request) -> web.Response:
        if "expireSourcedJobsBySourcedPostingId" in (await request.json())["query"]:
            return web.json_response({"errors": [error("INTERNAL_SERVER_ERROR")]}, status=503)
        return web.json_response(upserted("s1", "s2"))

    outcomes, _ = send("indeed", handler, [update("p1"), update("p2", 4, Op.DELETED)])
    assert outcomes[0] == Delivered("s1")
    assert isinstance(outcomes[1], Unsure) and "the expire call" in outcomes[1].reason


EXPIRED_ONE = {
    "data": {"jobsIngest": {"expireSourcedJobsBySourcedPostingId": {"results": [{"trackingKey": "k"}]}}}
}


def test_an_indeed_upsert_that_makes_a_new_job_expires_the_one_held_in_the_same_delivery():
    # The employer's sourceName changed: Indeed makes the update a new job, with a new id.
    renamed = action(update("p1", 3), job_id="s-old")
    outcomes, seen = send("indeed", answering(upserted("s-new"), EXPIRED_ONE), [renamed])
    assert outcomes == [Delivered("s-new")]
    _, expire = seen
    assert expire.json()["variables"]["input"] == {"jobs": [{"sourcedPostingId": "s-old"}]}
    same = dataclasses.replace(renamed, job_id="s-new")
    outcomes, seen = send("indeed", answering(upserted("s-new")), [same])
    assert outcomes == [Delivered("s-new")] and len(seen) == 1  # the same job: nothing to expire


def test_an_indeed_replaced_job_whose_expiry_fails_is_named_with_the_new_id_and_kept_jobs_go_later():
    async def handler(request: web.Request) -> web.Response:
        if "expireSourcedJobsBySourcedPostingId" in (await request.json())["query"]:
            return web.json_response({"errors": [error("INTERNAL_SERVER_ERROR")]}, status=503)
        return web.json_response(upserted("s-new"))

    renamed = action(update("p1", 3), job_id="s-old")
    (outcome,), _ = send("indeed", handler, [renamed])
    assert isinstance(outcome, Unsure) and "the expire call" in outcome.reason
    assert (outcome.job_id, outcome.unexpired) == ("s-new", ("s-old",))
    # Kept in the state: the next upsert, and a close, expire it with their own.
    kept = dataclasses.replace(renamed, job_id="s-new", replaced_ids=("s-old",))
    close = JobAction(Operation.CLOSE, "p2", "default", None, "s2", replaced_ids=("s2-old",))
    both = {
        "data": {
            "jobsIngest": {"expireSourcedJobsBySourcedPostingId": {"results": [{"trackingKey": "k"}] * 3}}
        }
    }
    outcomes, seen = send("indeed", answering(upserted("s-new"), both), [kept, close])
    assert outcomes == [Delivered("s-new"), Delivered()]
    assert seen[1].json()["variables"]["input"]["jobs"] == [
        {"sourcedPostingId": "s2"},
        {"sourcedPostingId": "s2-old"},
        {"sourcedPostingId": "s-old"},
    ]


def test_indeed_job_post_statuses_are_read_by_sourced_posting_id():
    statuses = {
        "data": {
            "nodes": [
                {"sourcedPostingId": "s1", "status": {"lifecycleStatus": "ACTIVE", "isRejected": False}},
                {"sourcedPostingId": "s2", "status": {"lifecycleStatus": "PENDING", "isRejected": False}},
                {"sourcedPostingId": "s3", "status": {"lifecycleStatus": "INACTIVE", "isRejected": True}},
                None,
            ]
        }
    }

    async def scenario():
        async with board(answering(statuses)) as b:
            jobs = [
                JobRef("p1", "s1"),
                JobRef("p2", "s2"),
                JobRef("p3", "s3"),
                JobRef("p4", "s4"),
                JobRef("p5", None),
            ]
            return await indeed(b.url, b.client).listings(jobs, "the-token"), b.seen

    found, seen = run(scenario())
    assert "nodes(ids: $ids)" in seen[0].json()["query"]
    assert seen[0].json()["variables"] == {"ids": ["s1", "s2", "s3", "s4"]}
    assert found["p1"] == BoardListing(ListingStatus.LIVE)
    assert found["p2"] == BoardListing(None)  # indexing: not decided yet
    assert found["p3"].status == ListingStatus.CLOSED_BY_BOARD and "isRejected" in (found["p3"].reason or "")
    assert "p4" not in found and "p5" not in found


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
            await (linkedin if kind == "linkedin" else indeed)(url, client).send(
                [action(update())], "the-token"
            )

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
            await adapter.send([action(update())], "the-token")

    with pytest.raises(CallFailed, match=r"no answer within 0\.2 s"):
        run(scenario())
