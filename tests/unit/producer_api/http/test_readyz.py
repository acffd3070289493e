"""/readyz per capability: `for` names what decides the status (writes, reads, search);
without it, everything does, as before. A replica whose sequencer member is away still
says it serves reads."""

from __future__ import annotations

from fastapi.testclient import TestClient

from producer_api.config import ApiSettings
from producer_api.http.app import create_app
from producer_api.readiness import Report

MEMBER_AWAY = "this replica's sequencer member has no session"


class Fixed:
    def __init__(self, report: Report) -> None:
        self._report = report

    async def report(self) -> Report:
        return self._report


def client(report: Report) -> TestClient:
    app = create_app(ApiSettings(tokens="t"))
    app.state.readiness = Fixed(report)
    return TestClient(app)


WRITES_AWAY = Report(
    checks={"kafka": None, "sequencer": MEMBER_AWAY, "elasticsearch": None},
    capabilities={"writes": MEMBER_AWAY, "reads": None, "search": None},
)


def test_without_for_every_capability_decides_as_before():
    answer = client(WRITES_AWAY).get("/readyz")

    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "not ready"
    assert body["capabilities"] == {"writes": False, "reads": True, "search": True}
    assert body["checks"] == {"kafka": True, "sequencer": False, "elasticsearch": True}
    assert body["reasons"] == {"sequencer": MEMBER_AWAY, "writes": MEMBER_AWAY}


def test_reads_are_ready_while_the_sequencer_member_is_away():
    api = client(WRITES_AWAY)

    assert api.get("/readyz", params={"for": "reads"}).status_code == 200
    assert api.get("/readyz", params={"for": "reads,search"}).json()["status"] == "ready"
    assert api.get("/readyz", params={"for": "writes"}).status_code == 503
    assert api.get("/readyz", params={"for": "reads, writes"}).status_code == 503


def test_everything_ready_answers_200_whatever_is_asked():
    ready = Report(
        checks={"kafka": None, "sequencer": None, "elasticsearch": None},
        capabilities={"writes": None, "reads": None, "search": None},
    )
    api = client(ready)
    for asked in (None, "writes", "reads", "search", "writes,reads,search"):
        answer = api.get("/readyz", params={} if asked is None else {"for": asked})
        assert (answer.status_code, answer.json()["reasons"]) == (200, {}), asked


def test_an_unknown_capability_is_a_clear_422():
    answer = client(WRITES_AWAY).get("/readyz", params={"for": "writes,coffee"})

    assert answer.status_code == 422
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "coffee" in answer.json()["detail"]
