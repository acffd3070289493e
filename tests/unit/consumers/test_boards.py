"""What the adapters make of a board's answers, against a local aiohttp server that
answers as told (no Kafka, milliseconds)."""

import asyncio

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from consumers.boards.indeed import IndeedAdapter, IndeedSettings
from consumers.boards.linkedin import LinkedInAdapter, LinkedInSettings
from consumers.errors import RejectedError, RetryableError
from jobpost.sandbox import MALFORMED_ANSWERS
from schemas.model import Op, Posting, PostingUpdate

UPDATE = PostingUpdate(
    posting_id="p1",
    version=1,
    op=Op.UPDATED,
    idempotency_key="p1:1",
    request_id="r1",
    posting=Posting("Engineer", "d", ""),
    last_update_time_millis=1,
    accepted_at=1,
)


def call_board(kind: str, operation: str, handler) -> None:
    """Let the adapter of `kind` run `operation` (upsert or close) against a local server
    whose every answer `handler` makes."""

    async def call() -> None:
        app = web.Application()
        app.router.add_post("/linkedin/rest/simpleJobPostings", handler)
        app.router.add_post("/indeed/graphql", handler)
        async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as client:
            base = str(server.make_url(""))
            adapter = (
                LinkedInAdapter(client, LinkedInSettings(base_url=f"{base}/linkedin"))
                if kind == "linkedin"
                else IndeedAdapter(client, IndeedSettings(base_url=f"{base}/indeed"))
            )
            await getattr(adapter, operation)(UPDATE)

    asyncio.run(call())


def deliver(kind: str, status: int, body: bytes, content_type: str = "application/json", **headers: str):
    async def handler(_request: web.Request) -> web.Response:
        return web.Response(status=status, body=body, content_type=content_type, headers=headers)

    call_board(kind, "upsert", handler)


@pytest.mark.parametrize("kind", ["linkedin", "indeed"])
@pytest.mark.parametrize(("body", "content_type"), MALFORMED_ANSWERS)
def test_an_answer_nobody_can_read_is_retryable_and_quoted(kind, body, content_type):
    with pytest.raises(RetryableError) as caught:
        deliver(kind, 200, body, content_type)
    assert "answered 200 with a body that" in str(caught.value)
    assert "'" in str(caught.value)  # the start of what came, quoted


def test_accepted_answers_pass():
    deliver("linkedin", 200, b'{"elements": [{"status": 202, "id": "p1"}]}')
    deliver("indeed", 200, b'{"data": {"jobsIngest": {"createSourcedJobPostings": {"results": []}}}}')


@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_retryable_statuses(status):
    with pytest.raises(RetryableError) as caught:
        deliver("indeed", status, b'{"message": "later"}', **{"Retry-After": "7"})
    assert caught.value.retry_after_s == 7


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_rejections(status):
    with pytest.raises(RejectedError):
        deliver("linkedin", status, b'{"message": "no"}')


def test_element_and_graphql_errors_are_classified():
    with pytest.raises(RejectedError):
        deliver("linkedin", 200, b'{"elements": [{"status": 400, "error": "bad title"}]}')
    with pytest.raises(RetryableError):
        deliver("linkedin", 200, b'{"elements": [{"status": 503}]}')
    with pytest.raises(RejectedError):
        deliver("indeed", 200, b'{"errors": [{"message": "no", "extensions": {"code": "BAD_USER_INPUT"}}]}')
    with pytest.raises(RetryableError):
        deliver(
            "indeed",
            200,
            b'{"errors": [{"message": "later", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}]}',
        )


def sent_by(kind: str, operation: str) -> tuple[dict, dict]:
    """The JSON body and headers an adapter sends for `operation` (upsert or close)."""
    seen: list[tuple[dict, dict]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((await request.json(), dict(request.headers)))
        answer = {"elements": [{"status": 202}]} if kind == "linkedin" else {"data": {"jobsIngest": {}}}
        return web.json_response(answer)

    call_board(kind, operation, handler)
    return seen[0]


def test_linkedin_is_sent_the_snapshot_and_the_idempotency_key():
    body, headers = sent_by("linkedin", "upsert")
    assert body == {
        "elements": [
            {
                "externalJobPostingId": "p1",
                "title": "Engineer",
                "description": "d",
                "listedAt": 1,
                "jobPostingOperationType": "UPDATE",
            }
        ]
    }
    assert headers["Idempotency-Key"] == "p1:1"
    assert sent_by("linkedin", "close")[0]["elements"][0]["jobPostingOperationType"] == "CLOSE"


def test_indeed_is_sent_the_snapshot_and_the_idempotency_key():
    body, headers = sent_by("indeed", "upsert")
    assert body["variables"]["input"] == {
        "jobPostings": [
            {
                "jobPostingId": "p1",
                "sourceName": "jobpost",
                "title": "Engineer",
                "description": "d",
                "datePublished": 1,
            }
        ]
    }
    assert headers["Idempotency-Key"] == "p1:1"
    closed, _ = sent_by("indeed", "close")
    assert closed["variables"]["input"] == {"sourcedPostingIds": ["p1"], "sourceName": "jobpost"}
