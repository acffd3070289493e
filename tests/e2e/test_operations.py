"""The playground's data over HTTP, against the system as `make run` starts it: a posting's
timeline, each board's dead letters and their redrive, consumer lag, the fault switches."""

import httpx

from tests.e2e.conftest import System
from tests.processes import wait_until


def lanes(system: System, posting_id: str) -> dict[str, list[str]]:
    timeline = system.http.get(f"/postings/{posting_id}/timeline").json()
    return {name: [cell["state"] for cell in lane["cells"]] for name, lane in timeline["lanes"].items()}


def test_a_rejected_version_is_dead_lettered_listed_and_redriven_from_the_api(system: System):
    http = system.http
    posting_id = http.post(
        "/postings", json={"title": "Site Reliability Engineer", "description": "d"}
    ).json()["id"]
    everywhere = {"linkedin": ["delivered"], "indeed": ["delivered"], "search": ["delivered"]}
    wait_until(lambda: lanes(system, posting_id) == everywhere, 60, "version 0 delivered everywhere")
    timeline = http.get(f"/postings/{posting_id}/timeline").json()
    assert timeline["versions"][0]["op"] == "CREATED"
    assert timeline["versions"][0]["title"] == "Site Reliability Engineer"
    assert {e["destination"] for e in timeline["events"]} == {"linkedin", "indeed", "search"}
    assert all(lane["waiting_for"] == 1 for lane in timeline["lanes"].values())

    assert http.get("/ops/boards").json()["available"] is True
    assert http.put("/ops/boards/linkedin/faults", json={"mode": "reject"}).json()["mode"] == "reject"
    assert httpx.get(f"{system.sandbox}/_sandbox/linkedin/faults").json()["mode"] == "reject"
    http.put(
        f"/postings/{posting_id}",
        json={"title": "Senior SRE", "description": "d"},
        headers={"If-Match": '"0"'},
    )
    wait_until(
        lambda: lanes(system, posting_id)["linkedin"] == ["delivered", "dead_lettered"], 60, "dead letter"
    )
    # Indeed delivers version 1 on its own lane, in its own time: LinkedIn's rejection never holds it.
    wait_until(lambda: lanes(system, posting_id)["indeed"] == ["delivered", "delivered"], 60, "Indeed v1")

    def letter() -> dict | None:
        found = [
            x
            for x in http.get("/ops/dead-letters/linkedin").json()["letters"]
            if x["posting_id"] == posting_id
        ]
        return found[0] if found else None

    listed = letter()
    assert listed is not None
    assert (listed["version"], listed["resolved"], listed["attempts"]) == (1, False, 1)
    assert "400" in listed["error"]

    http.put("/ops/boards/linkedin/faults", json={"mode": "none"})
    answer = http.post(
        "/ops/dead-letters/linkedin/redrive",
        json={"partition": listed["partition"], "offset": listed["offset"]},
    )
    assert answer.status_code == 202  # a request: the LinkedIn consumer handles it in the posting's lane
    (request,) = answer.json()["requests"]
    assert (request["posting_id"], request["version"]) == (posting_id, 1)

    def redriven() -> dict | None:
        events = http.get(f"/postings/{posting_id}/timeline").json()["events"]
        return next((e for e in events if e["request_id"] == request["request_id"]), None)

    outcome = wait_until(lambda: (e := redriven()) and e["outcome"] == "delivered" and e, 60, "the redrive")
    assert outcome["destination"] == "linkedin"
    assert system.board("linkedin", posting_id)["versions"] == [0, 1]
    wait_until(
        lambda: lanes(system, posting_id)["linkedin"] == ["delivered", "delivered"], 30, "redriven shown"
    )
    wait_until(lambda: letter()["resolved"], 30, "the letter to read as resolved")
    # A second redrive of everything finds nothing left to do.
    assert http.post("/ops/dead-letters/linkedin/redrive", json={}).json() == {"requests": []}

    lag = lambda: {g["destination"]: g["lag"] for g in http.get("/ops/lag").json()["groups"]}  # noqa: E731
    wait_until(lambda: lag() == {"linkedin": 0, "indeed": 0, "search": 0}, 30, "every group caught up")


def test_operations_refuse_what_they_cannot_do(system: System):
    http = system.http
    half = http.post("/ops/dead-letters/linkedin/redrive", json={"partition": 0})
    assert half.status_code == 422
    assert half.headers["content-type"] == "application/problem+json"
    assert http.put("/ops/boards/monster/faults", json={"mode": "error"}).status_code == 422
    assert http.put("/ops/boards/indeed/faults", json={"mode": "explode"}).status_code == 422
    assert httpx.get(f"{system.api}/ops/lag").status_code == 401
    assert http.get("/postings/no-such-posting/timeline").status_code == 404
    page = httpx.get(f"{system.api}/ui/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
