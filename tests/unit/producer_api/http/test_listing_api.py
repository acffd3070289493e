"""The API refuses, when a posting is written, what a board it targets would refuse: the
refusal table (tests/refusal_cases.py) through POST /postings, PUT, each batch item and
POST /postings:validate, against the service with a fake sequencer (no Kafka): 422 naming
the board, the pointer and the code, and no command sent."""

import json

import pytest
from fastapi.testclient import TestClient

from producer_api.config import ApiSettings
from producer_api.credentials import sha256
from producer_api.http.app import create_app
from producer_api.http.identity import Identity
from producer_api.read.views import DeliveriesView, PostingsView
from producer_api.service import PostingService
from runtime.kafka import KafkaSettings
from schemas.model import Command, Outcome, Reply
from tests import postings
from tests.refusal_cases import CASES, REGISTRY, RefusalCase

EMPLOYERS = ("default", "indeed-only", "linkedin-only")


class Sequencer:
    """Accepts every command at version 0 and keeps what it was sent."""

    def __init__(self) -> None:
        self.sent: list[Command] = []

    async def send(self, command: Command, timeout_s: float) -> Reply:
        self.sent.append(command)
        return Reply(command.request_id, "c", command.posting_id, Outcome.ACCEPTED, 0, False, 1234)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One service for the module (building one and its first answer take most of a test's
    time); `api` gives each test its sequencer with nothing sent."""
    credentials = tmp_path_factory.mktemp("api") / "credentials.json"
    entries = [
        {
            "name": f"ats-{e}",
            "token_sha256": sha256(e).hex(),
            "employer": e,
            "scopes": ["postings:read", "postings:write"],
        }
        for e in EMPLOYERS
    ]
    credentials.write_text(json.dumps({"credentials": entries}))
    settings = ApiSettings(credentials_file=credentials)
    app = create_app(settings)  # never started: the state the lifespan would build is set here
    sequencer = Sequencer()
    kafka = KafkaSettings()
    app.state.settings = settings
    app.state.identity = Identity.of(settings)
    app.state.service = PostingService(
        sequencer,
        PostingsView(kafka),
        DeliveriesView(kafka),
        None,
        1.0,
        employers=REGISTRY,  # type: ignore[arg-type]
    )
    client = TestClient(app)
    client.sequencer = sequencer  # type: ignore[attr-defined]
    return client


@pytest.fixture
def api(service):
    service.sequencer.sent.clear()
    return service


def as_(employer: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {employer}"}


def refused_as_the_table_says(answer, case: RefusalCase) -> None:
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    assert problem["type"] == "https://jobpost.dev/problems/not-listable"
    assert case.board in problem["detail"]
    assert [(e["board"], e["pointer"], e["code"]) for e in problem["errors"]] == [
        (case.board, case.pointer, case.code)
    ]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_create_a_board_would_refuse_is_refused_and_nothing_is_written(api, case):
    answer = api.post("/postings", json=case.body(), headers=as_(case.employer))
    refused_as_the_table_says(answer, case)
    assert api.sequencer.sent == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_replace_a_board_would_refuse_is_refused_and_nothing_is_written(api, case):
    answer = api.put("/postings/p-1", json=case.body(), headers=as_(case.employer))
    refused_as_the_table_says(answer, case)
    assert api.sequencer.sent == []


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_validate_says_which_board_would_refuse_what(api, case):
    answer = api.post("/postings:validate", json=case.body(), headers=as_(case.employer))
    assert answer.status_code == 200, answer.text
    boards = answer.json()["boards"]
    assert boards[case.board]["listable"] is False
    assert [(e["board"], e["pointer"], e["code"]) for e in boards[case.board]["errors"]] == [
        (case.board, case.pointer, case.code)
    ]
    others = {name: verdict for name, verdict in boards.items() if name != case.board}
    assert all(v == {"listable": True, "errors": []} for v in others.values())
    assert api.sequencer.sent == []


def test_each_batch_item_is_refused_as_alone_and_the_listable_ones_are_written(api):
    linkedin = [c for c in CASES if c.board == "linkedin" and c.employer == "default"]
    items = [{"op": "create", "posting": c.body()} for c in linkedin]
    items.insert(1, {"op": "create", "posting": postings.body(7)})
    answer = api.post("/postings:batch", json={"items": items}, headers=as_("default"))
    assert answer.status_code == 200
    answered = answer.json()["items"]
    assert answered[1]["status"] == 201
    for case, item in zip(linkedin, answered[:1] + answered[2:], strict=True):
        assert item["status"] == 422
        assert [(e["board"], e["pointer"], e["code"]) for e in item["problem"]["errors"]] == [
            (case.board, case.pointer, case.code)
        ]
    assert len(api.sequencer.sent) == 1


def test_a_listable_posting_is_written_with_every_field_as_accepted(api):
    body = postings.body(
        0,
        description_format="html",
        description="<p>" + postings.body(0)["description"] + ' <a href="https://x.example">more</a></p>',
        boards=["indeed"],
        expires_at="2099-01-31T12:00:00Z",
    )
    answer = api.post("/postings", json=body, headers=as_("default"))
    assert answer.status_code == 201, answer.text
    created = answer.json()
    assert created["description"].endswith(" more</p>")  # cleaned: the link's tag is gone
    assert created["locations"] == [
        {"city": "Berlin", "region": "Berlin", "postal_code": "10115", "country": "DE"}
    ]
    assert (created["workplace"], created["employment_type"], created["boards"]) == (
        "on_site",
        "full_time",
        ["indeed"],
    )
    assert created["salary"] == {"min": 55000.0, "max": 75000.0, "currency": "EUR", "period": "year"}
    assert created["expires_at"] == "2099-01-31T12:00:00Z"
    (command,) = api.sequencer.sent
    assert command.posting.description == created["description"]


def test_a_posting_for_no_board_needs_only_what_the_api_itself_requires(api):
    body = {"title": "Internal transfer", "description": "", "locations": [{"country": "DE"}], "boards": []}
    assert api.post("/postings", json=body, headers=as_("indeed-only")).status_code == 201


def test_the_deprecated_location_is_read_as_one_place_or_refused_saying_to_send_locations(api):
    body = postings.body(0, locations=postings.ABSENT, location="Toronto, Ontario, Canada")
    created = api.post("/postings", json=body, headers=as_("default"))
    assert created.status_code == 201, created.text
    assert created.json()["locations"] == [
        {"city": "Toronto", "region": "Ontario", "postal_code": None, "country": "CA"}
    ]
    assert created.json()["location"] is None

    unrecognized = api.post("/postings", json={**body, "location": "Remote"}, headers=as_("default"))
    assert unrecognized.status_code == 422
    (error,) = unrecognized.json()["errors"]
    assert (error["board"], error["pointer"], error["code"]) == (None, "/location", "location_unrecognized")
    assert "locations" in error["detail"]

    # A board's problem with a location read from `location` points at what was sent.
    alone = api.post(
        "/postings:validate",
        json={**body, "location": "Lyon, France", "boards": ["indeed"], "workplace": "on_site"},
        headers=as_("default"),
    )
    assert alone.json()["boards"]["indeed"]["listable"] is True


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"locations": postings.ABSENT}, ["body", "locations"]),
        ({"location": "Berlin, Germany"}, ["body", "location"]),  # with locations: never both
        ({"locations": []}, ["body", "locations"]),
        ({"locations": [{"city": "Berlin", "country": "XX"}]}, ["body", "locations", 0, "country"]),
        ({"salary": {"min": 10, "currency": "EUX", "period": "year"}}, ["body", "salary", "currency"]),
        ({"salary": {"min": 90, "max": 80, "currency": "EUR", "period": "year"}}, ["body", "salary"]),
        ({"salary": {"min": 0, "currency": "EUR", "period": "year"}}, ["body", "salary", "min"]),
        ({"boards": ["linkedin", "linkedin"]}, ["body", "boards"]),
        ({"boards": ["monster"]}, ["body", "boards", 0]),
        ({"expires_at": "2020-01-01T00:00:00Z"}, ["body", "expires_at"]),
        ({"workplace": "office"}, ["body", "workplace"]),
    ],
)
def test_a_body_that_is_not_a_posting_is_refused_by_the_api_itself(api, changes, where):
    answer = api.post("/postings:validate", json=postings.body(0, **changes), headers=as_("default"))
    assert answer.status_code == 422, answer.text
    assert answer.json()["title"] == "Invalid request"
    assert where in [e["loc"] for e in answer.json()["errors"]]
    assert api.sequencer.sent == []


def test_validate_needs_the_write_scope(api, tmp_path):
    answer = api.post("/postings:validate", json=postings.body(0))
    assert answer.status_code == 401
