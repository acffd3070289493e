"""POST /postings:batch over the real app, service and sequencer domain, with a command client
that decides in memory: each item answered as the same request alone (the single routes,
on a twin of the same state), the per-item outcome mapping, the batch's own refusals."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from producer_api.batch import Write, apply
from producer_api.callers import EVERY_SCOPE
from producer_api.commands import OutcomeUnknown
from producer_api.config import ApiSettings
from producer_api.http.app import create_app
from producer_api.http.identity import Identity
from producer_api.http.routes.batch import answer
from producer_api.read.views import DeliveriesView, PostingsView, PostingView
from producer_api.service import Caller, PostingError, PostingService, Unavailable, create_id
from runtime.kafka import KafkaSettings
from schemas.model import DEFAULT_EMPLOYER, Action, Command, Posting, Reply
from sequencer.domain import PartitionState
from tests import postings

TOKEN = "unit-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
POSTING = postings.body(9, title="Forklift Driver")


class InMemorySequencer:
    """The command client's contract (send a command, get its reply), decided by the
    sequencer's own domain; posting ids in `late` are never answered in time."""

    def __init__(self) -> None:
        self.state = PartitionState()
        self.sent: list[Command] = []
        self.late: set[str] = set()
        self._ids = itertools.count()
        self._clock = itertools.count(1_000_000)

    async def send(self, command: Command, timeout_s: float) -> Reply:
        correlation_id = f"c{next(self._ids)}"
        command = dataclasses.replace(
            command, correlation_id=correlation_id, request_id=command.request_id or correlation_id
        )
        self.sent.append(command)
        # A later command is decided sooner: nothing here keeps the order it was sent in,
        # so the batch must keep a posting's order itself.
        for _ in range(max(0, 200 - len(self.sent))):
            await asyncio.sleep(0)
        if command.posting_id in self.late:
            raise OutcomeUnknown("no verdict from the sequencer in time", 9)
        return self.state.decide(command, next(self._clock)).result.reply_to(command)


def client(settings: ApiSettings | None = None) -> tuple[TestClient, InMemorySequencer]:
    settings = settings or ApiSettings(tokens=TOKEN)
    app = create_app(settings)  # its lifespan never runs: nothing connects
    sequencer = InMemorySequencer()
    kafka = KafkaSettings()
    app.state.settings = settings
    app.state.identity = Identity.of(settings)
    app.state.service = PostingService(sequencer, PostingsView(kafka), DeliveriesView(kafka), None, 1.0)  # type: ignore[arg-type]
    return TestClient(app, headers=AUTH), sequencer


def alone(http: TestClient, item: dict[str, Any]) -> dict[str, Any]:
    """The single request the item stands for, answered as a batch item would be."""
    headers = {}
    if "if_match" in item:
        headers["If-Match"] = item["if_match"]
    if "idempotency_key" in item:
        headers["Idempotency-Key"] = item["idempotency_key"]
    path = "/postings" if item["op"] == "create" else f"/postings/{item.get('id', '')}"
    method = {"create": "POST", "replace": "PUT", "delete": "DELETE"}[item["op"]]
    if "posting" in item:  # as JSON even when null (httpx sends no body for json=None)
        headers["Content-Type"] = "application/json"
    body = json.dumps(item["posting"]) if "posting" in item else None
    response = http.request(method, path, headers=headers, content=body)
    kept = {h: response.headers[h] for h in ("Location", "ETag", "Retry-After") if h in response.headers}
    part = "problem" if response.status_code >= 400 else "posting"
    return {"status": response.status_code, "headers": kept, part: response.json()}


def batch(http: TestClient, items: list[Any]) -> list[dict[str, Any]]:
    response = http.post("/postings:batch", json={"items": items})
    assert response.status_code == 200, response.text
    return response.json()["items"]


def without_times(answer: dict[str, Any]) -> dict[str, Any]:
    posting = answer.get("posting")
    if posting and "last_update_time_millis" in posting:
        return {**answer, "posting": {**posting, "last_update_time_millis": "(a time)"}}
    return answer


KEYED = create_id(DEFAULT_EMPLOYER, "sync-1")
SCRIPT: list[dict[str, Any]] = [
    {"op": "create", "idempotency_key": "sync-1", "posting": POSTING},
    {"op": "create", "idempotency_key": "sync-1", "posting": POSTING},  # a retry: the same posting
    {"op": "create", "idempotency_key": "sync-1", "posting": {**POSTING, "title": "Another"}},  # key reused
    {"op": "replace", "id": KEYED, "if_match": '"0"', "posting": {**POSTING, "notes": "v1"}},
    {"op": "replace", "id": KEYED, "if_match": '"0"', "posting": POSTING},  # stale: 412 with the ETag
    {"op": "replace", "id": KEYED, "if_match": "*", "idempotency_key": "r-2", "posting": POSTING},
    {"op": "replace", "id": "no-such-posting", "posting": POSTING},
    {"op": "replace", "id": KEYED, "posting": {"title": "", "extra": 1}},  # invalid body
    {"op": "replace", "id": KEYED, "posting": "not an object"},
    {"op": "replace", "id": KEYED, "posting": None},
    {"op": "replace", "id": KEYED},  # no body
    {"op": "replace", "id": "bad id!", "if_match": "three", "idempotency_key": "tab\there", "posting": {}},
    {"op": "create", "idempotency_key": "k" * 256, "posting": {**POSTING, "apply_url": "ftp://x"}},
    {"op": "delete", "id": KEYED, "if_match": '"1"'},  # stale
    {"op": "delete", "id": KEYED, "idempotency_key": "d-1"},
    {"op": "delete", "id": KEYED, "idempotency_key": "d-1"},  # a retry of the delete
    {"op": "delete", "id": KEYED},  # gone
    {"op": "replace", "id": KEYED, "posting": POSTING},  # gone
    {"op": "create", "idempotency_key": "sync-1", "posting": POSTING},  # a retry, after the delete
]


def test_each_item_is_answered_as_the_same_request_alone_in_the_order_given():
    single, _ = client()
    expected = [without_times(alone(single, item)) for item in SCRIPT]
    bulk, _ = client()

    answers = [without_times(a) for a in batch(bulk, SCRIPT)]

    assert answers == expected
    assert [a["status"] for a in answers] == [
        201, 201, 422, 200, 412, 200, 404, 422, 422, 422, 422, 422, 422, 412, 200, 200, 410, 410, 201,
    ]  # fmt: skip
    assert answers[4]["headers"] == {"ETag": '"1"'}  # the version If-Match should have named


def test_every_item_of_one_posting_applies_in_order_and_the_others_together():
    http, sequencer = client()
    items = [
        {"op": "create", "idempotency_key": "a", "posting": POSTING},
        {"op": "create", "idempotency_key": "b", "posting": POSTING},
        {"op": "replace", "id": create_id(DEFAULT_EMPLOYER, "a"), "if_match": '"0"', "posting": POSTING},
        {"op": "replace", "id": create_id(DEFAULT_EMPLOYER, "a"), "if_match": '"1"', "posting": POSTING},
        {"op": "delete", "id": create_id(DEFAULT_EMPLOYER, "a"), "if_match": '"2"'},
    ]

    answers = batch(http, items)

    assert [a["status"] for a in answers] == [201, 201, 200, 200, 200]
    assert [a["posting"]["version"] for a in answers] == [0, 0, 1, 2, 3]
    # b's create went out beside a's, not after a's last write.
    assert [c.action for c in sequencer.sent][:2] == [Action.CREATE, Action.CREATE]


def test_a_write_not_answered_in_time_is_that_items_504_alone():
    http, sequencer = client()
    late = create_id(DEFAULT_EMPLOYER, "late")
    sequencer.late.add(late)

    answers = batch(
        http,
        [
            {"op": "create", "idempotency_key": "late", "posting": POSTING},
            {"op": "create", "idempotency_key": "fine", "posting": POSTING},
        ],
    )

    # Its outcome is unknown (it may yet be applied): a 504 naming when it will be settled.
    assert [a["status"] for a in answers] == [504, 201]
    assert answers[0]["headers"] == {"Retry-After": "9"}
    assert answers[0]["problem"]["type"] == "https://jobpost.dev/problems/outcome-unknown"


VIEW = PostingView("p1", 3, False, Posting("T", "D"), 1234)
GONE_VIEW = PostingView("p1", 3, True, None, 1234)
CREATE = Write(Action.CREATE, None, Posting("T", "D"))
REPLACE = Write(Action.REPLACE, "p1", Posting("T", "D"))
DELETE = Write(Action.DELETE, "p1", None)


@pytest.mark.parametrize(
    ("write", "result", "status", "headers", "problem_type"),
    [
        (CREATE, VIEW, 201, {"Location": "/postings/p1", "ETag": '"3"'}, None),
        (REPLACE, VIEW, 200, {"ETag": '"3"'}, None),
        (DELETE, GONE_VIEW, 200, {}, None),
        (REPLACE, PostingError("NOT_FOUND", "no posting"), 404, {}, "not-found"),
        (DELETE, PostingError("GONE", "deleted", 4), 410, {"ETag": '"4"'}, "gone"),
        (REPLACE, PostingError("VERSION_MISMATCH", "x", 5), 412, {"ETag": '"5"'}, "precondition-failed"),
        (CREATE, PostingError("ALREADY_EXISTS", "x", 0), 409, {"ETag": '"0"'}, "conflict"),
        (CREATE, PostingError("KEY_REUSED", "x"), 422, {}, "idempotency-key-reused"),
        (CREATE, Unavailable("x"), 503, {"Retry-After": "1"}, "service-unavailable"),
        (REPLACE, OutcomeUnknown("x", 7), 504, {"Retry-After": "7"}, "outcome-unknown"),
        (CREATE, RuntimeError("secret detail"), 500, {}, "internal-error"),
    ],
)
def test_each_result_maps_to_the_answer_the_single_route_gives(write, result, status, headers, problem_type):
    item = answer(write, result)

    assert (item["status"], item["headers"]) == (status, headers)
    if problem_type is None:
        assert item["posting"]["version"] == result.version
        assert "problem" not in item
    else:
        assert item["problem"]["type"] == f"https://jobpost.dev/problems/{problem_type}"
        assert item["problem"]["status"] == status
        assert "secret" not in item["problem"]["detail"] and "posting" not in item


def test_a_delete_answers_what_the_single_delete_answers():
    item = answer(Write(Action.DELETE, "p1", None), PostingView("p1", 4, True, None, 1))
    assert item["posting"] == {"id": "p1", "version": 4, "status": "deleted"}


def test_a_server_failure_of_one_write_leaves_the_others_answered():
    class Failing(InMemorySequencer):
        async def send(self, command: Command, timeout_s: float) -> Reply:
            if command.request_id == "boom":
                raise RuntimeError("a bug")
            return await super().send(command, timeout_s)

    kafka = KafkaSettings()
    service = PostingService(Failing(), PostingsView(kafka), DeliveriesView(kafka), None, 1.0)  # type: ignore[arg-type]
    writes = [Write(Action.CREATE, None, Posting("T", ""), key) for key in ("boom", "fine")]

    results = asyncio.run(apply(service, Caller("dev-token-1", scopes=EVERY_SCOPE), writes))

    assert isinstance(results[0], RuntimeError)
    assert isinstance(results[1], PostingView) and results[1].version == 0


def test_the_limits_of_the_settings_apply_to_each_item_as_alone():
    settings = ApiSettings(tokens=TOKEN, title_max_chars=10)
    item = {"op": "create", "posting": {**POSTING, "title": "A title longer than ten"}}
    expected = alone(client(settings)[0], item)

    (answered,) = batch(client(settings)[0], [item])

    assert answered == expected and answered["status"] == 422
    assert answered["problem"]["errors"][0]["loc"] == ["body", "title"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"items": []},
        {"items": [{"op": "create", "posting": POSTING}] * 101},
        {"items": [{"op": "create", "posting": POSTING}], "atomic": True},
        {"items": [{"op": "create", "posting": POSTING, "priority": 1}]},
        {"items": [{"op": "upsert", "posting": POSTING}]},
        {"items": ["create"]},
        {"items": {"op": "create"}},
    ],
)
def test_what_is_not_a_batch_is_refused_whole_and_nothing_is_sent(body):
    http, sequencer = client()

    response = http.post("/postings:batch", json=body)

    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["errors"]
    assert sequencer.sent == []


@pytest.mark.parametrize(
    "item",
    [
        {"op": "create", "id": "p1", "posting": POSTING},
        {"op": "create", "if_match": '"0"', "posting": POSTING},
        {"op": "delete", "id": "p1", "posting": POSTING},
    ],
)
def test_a_field_the_op_does_not_take_is_that_items_422(item):
    http, sequencer = client()

    (answered,) = batch(http, [item])

    assert answered["status"] == 422
    assert answered["problem"]["errors"][0]["type"] == "extra_forbidden"
    assert sequencer.sent == []


def test_a_body_over_the_batch_limit_is_413_and_the_single_limit_stays():
    settings = ApiSettings(tokens=TOKEN, max_body_bytes=2_000, max_batch_body_bytes=20_000)
    http, sequencer = client(settings)
    posting = {**POSTING, "description": "x" * 1_500}

    assert http.post("/postings", json={**posting, "description": "x" * 3_000}).status_code == 413
    fits = http.post("/postings:batch", json={"items": [{"op": "create", "posting": posting}] * 10})
    over = http.post("/postings:batch", json={"items": [{"op": "create", "posting": posting}] * 20})

    assert fits.status_code == 200 and [i["status"] for i in fits.json()["items"]] == [201] * 10
    assert over.status_code == 413 and over.headers["content-type"] == "application/problem+json"
    assert len(sequencer.sent) == 10


def test_a_batch_needs_a_token():
    http, sequencer = client()
    response = http.post(
        "/postings:batch",
        json={"items": [{"op": "create", "posting": POSTING}]},
        headers={"Authorization": ""},
    )
    assert response.status_code == 401 and sequencer.sent == []
