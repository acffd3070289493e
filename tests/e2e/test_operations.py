"""The playground's data over HTTP, against the system as `make run` starts it: a posting's
timeline, each board's dead letters and their redrive, consumer lag, the fault switches."""

import httpx

from tests.client import ApiClient
from tests.e2e.conftest import System
from tests.processes import wait_until


def lanes(api: ApiClient, posting_id: str) -> dict[str, list[str]]:
    timeline = api.timeline(posting_id)
    return {name: [cell["state"] for cell in lane["cells"]] for name, lane in timeline["lanes"].items()}


def test_a_rejected_version_is_dead_lettered_listed_and_redriven_from_the_api(system: System):
    api = system.client
    posting_id = api.create(title="Site Reliability Engineer")["id"]
    everywhere = {"linkedin": ["delivered"], "indeed": ["delivered"], "search": ["delivered"]}
    wait_until(lambda: lanes(api, posting_id) == everywhere, 60, "version 0 delivered everywhere")
    timeline = api.timeline(posting_id)
    assert timeline["versions"][0]["op"] == "CREATED"
    assert timeline["versions"][0]["title"] == "Site Reliability Engineer"
    assert {e["destination"] for e in timeline["events"]} == {"linkedin", "indeed", "search"}
    assert all(lane["waiting_for"] == 1 for lane in timeline["lanes"].values())

    assert api.request("GET", "/ops/boards", expect=200)["available"] is True
    rejecting = api.request("PUT", "/ops/boards/linkedin/faults", json={"mode": "reject"}, expect=200)
    assert rejecting["mode"] == "reject"
    assert httpx.get(f"{system.sandbox}/_sandbox/linkedin/faults").json()["mode"] == "reject"
    api.replace(posting_id, title="Senior SRE", if_match=0)
    wait_until(
        lambda: lanes(api, posting_id)["linkedin"] == ["delivered", "dead_lettered"], 60, "dead letter"
    )
    # Indeed delivers version 1 on its own lane, in its own time: LinkedIn's rejection never holds it.
    wait_until(lambda: lanes(api, posting_id)["indeed"] == ["delivered", "delivered"], 60, "Indeed v1")

    def letter() -> dict | None:
        letters = api.request("GET", "/ops/dead-letters/linkedin", expect=200)["letters"]
        found = [x for x in letters if x["posting_id"] == posting_id]
        return found[0] if found else None

    # The list comes from the API's index of the dead-letter topic, which follows it.
    listed = wait_until(letter, 10, "the letter listed")
    assert (listed["version"], listed["resolved"], listed["attempts"]) == (1, False, 1)
    assert "400" in listed["error"]

    api.request("PUT", "/ops/boards/linkedin/faults", json={"mode": "none"}, expect=200)
    answer = api.request(
        "POST",
        "/ops/dead-letters/linkedin/redrive",
        json={"partition": listed["partition"], "offset": listed["offset"]},
        expect=202,  # a request: the LinkedIn consumer handles it in the posting's lane
    )
    (request,) = answer["requests"]
    assert (request["posting_id"], request["version"]) == (posting_id, 1)

    def redriven() -> dict | None:
        """The newest event of the request's attempt (LinkedIn: submitted, then delivered)."""
        events = api.timeline(posting_id)["events"]
        return next((e for e in reversed(events) if e["request_id"] == request["request_id"]), None)

    outcome = wait_until(lambda: (e := redriven()) and e["outcome"] == "delivered" and e, 60, "the redrive")
    assert outcome["destination"] == "linkedin"
    assert system.board("linkedin", posting_id)["versions"] == [0, 1]
    wait_until(lambda: lanes(api, posting_id)["linkedin"] == ["delivered", "delivered"], 30, "redriven shown")
    wait_until(lambda: (letter() or {}).get("resolved"), 30, "the letter to read as resolved")
    # A second redrive of everything finds nothing left to do.
    assert api.request("POST", "/ops/dead-letters/linkedin/redrive", json={}, expect=202) == {"requests": []}

    def lag() -> dict[str, int]:
        groups = api.request("GET", "/ops/lag", expect=200)["groups"]
        return {g["destination"]: g["lag"] for g in groups}

    wait_until(lambda: lag() == {"linkedin": 0, "indeed": 0, "search": 0}, 30, "every group caught up")


def test_operations_refuse_what_they_cannot_do(system: System):
    api = system.client
    api.request("POST", "/ops/dead-letters/linkedin/redrive", json={"partition": 0}, expect=422)
    api.request("PUT", "/ops/boards/monster/faults", json={"mode": "error"}, expect=422)
    api.request("PUT", "/ops/boards/indeed/faults", json={"mode": "explode"}, expect=422)
    ApiClient(system.url, token=None).request("GET", "/ops/lag", expect=401)
    api.timeline("no-such-posting", expect=404)
    page = httpx.get(f"{system.url}/ui/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
