"""A posting refused at LinkedIn's CREATE because its employer's LinkedIn identity is missing,
then the identity configured and the letter redriven (issue 34.3): live at LinkedIn, and every
later version an UPDATE of that job.

The API refuses at write time an employer with no LinkedIn identity, so the way such a
posting reaches the LinkedIn consumer is a deployment whose consumer reads a stale employer
registry: the API's registry (the sandbox's) has the employer's LinkedIn organization, the
consumer's file does not. Through the real API, the real LinkedIn consumer, real Kafka and
the sandbox; the letter is listed and redriven through the API, as an operator would."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from listing.employers import SANDBOX_REGISTRY
from tests import postings
from tests.integration.consumers.conftest import BoardDelivery, delivery_events
from tests.processes import ApiProcess, wait_until

# What an employer must never read: a file or path of the server, an environment variable,
# a setting's name (as tests/unit/listing/test_rules.py).
SERVER_INTERNALS = re.compile(r"JOBPOST_|_FILE\b|employers_file|\.json\b|/\w+/\w+|environment|setting", re.I)


def registry_file(path: Path, *, linkedin: bool) -> Path:
    """The sandbox's registry (employer `default`), with or without its LinkedIn organization."""
    default = SANDBOX_REGISTRY.employers["default"].model_dump()
    if not linkedin:
        default["linkedin"] = None
    path.write_text(json.dumps({"employers": {"default": default}}), encoding="utf-8")
    return path


def test_a_create_refused_for_a_missing_identity_is_live_once_the_identity_is_configured_and_redriven(
    api: ApiProcess, sandbox, start_consumer, kafka, tmp_path
):
    stale = registry_file(tmp_path / "stale-employers.json", linkedin=False)
    settings = {"JOBPOST_CONSUMER_LISTING_POLL_INTERVAL_S": "0.5"}
    consumer = start_consumer("linkedin", JOBPOST_CONSUMER_LINKEDIN__EMPLOYERS_FILE=str(stale), **settings)
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=15)

    created = http.post("/postings", json=postings.body(4, notes=""))
    assert created.status_code == 201, created.text  # the API's registry has the identity
    posting_id = created.json()["id"]
    linkedin = BoardDelivery(http, posting_id, "linkedin")

    refused = linkedin.refused(kafka)  # version 0
    assert refused["delivered_version"] is None, refused
    assert "LinkedIn" in refused["last_error"] and "'default'" in refused["last_error"], refused
    assert not SERVER_INTERNALS.search(refused["last_error"]), refused["last_error"]

    def timeline_errors() -> list[str]:
        events = http.get(f"/postings/{posting_id}/timeline").json()["events"]
        return [e["error"] for e in events if e["destination"] == "linkedin" and e["error"]]

    wait_until(timeline_errors, 30, "the refusal in the posting's timeline")
    errors = timeline_errors()
    assert not any(SERVER_INTERNALS.search(error) for error in errors), errors
    assert sandbox.posting("linkedin", posting_id) is None  # LinkedIn never heard of it

    def letters() -> list[dict]:
        answer = http.get("/ops/dead-letters/linkedin")
        assert answer.status_code == 200, answer.text
        return [x for x in answer.json()["letters"] if x["posting_id"] == posting_id]

    wait_until(letters, 30, "the dead letter listed by the API")
    (letter,) = letters()
    assert (letter["version"], letter["resolved"]) == (0, False), letter
    assert not SERVER_INTERNALS.search(letter["error"]), letter["error"]

    consumer.stop()  # the operator fixes the consumer's registry and restarts it
    fixed = registry_file(tmp_path / "employers.json", linkedin=True)
    start_consumer("linkedin", JOBPOST_CONSUMER_LINKEDIN__EMPLOYERS_FILE=str(fixed), **settings)
    redrive = http.post(
        "/ops/dead-letters/linkedin/redrive",
        json={"partition": letter["partition"], "offset": letter["offset"]},
    )
    assert redrive.status_code == 202, redrive.text
    assert [r["posting_id"] for r in redrive.json()["requests"]] == [posting_id], redrive.text
    (request_id,) = [r["request_id"] for r in redrive.json()["requests"]]

    wait_until(lambda: linkedin.live(0), 60, "the redriven version live at linkedin")
    listing = linkedin()["listing"]
    assert listing["id"].startswith("urn:li:jobPosting:") and listing["url"].startswith("https://"), listing
    at_board = sandbox.posting("linkedin", posting_id)
    assert at_board is not None
    assert [(e["operation"], e["state"]) for e in at_board["log"]] == [("CREATE", "SUCCEEDED")], at_board
    attempted = [(e.version, e.outcome) for e in delivery_events(kafka) if e.request_id == request_id]
    assert attempted and all(v == 0 and o != "SKIPPED" for v, o in attempted), (
        attempted
    )  # the redrive sent it

    for version, title in ((1, "Senior Backend Engineer, Payments"), (2, "Staff Backend Engineer, Payments")):
        replaced = http.put(f"/postings/{posting_id}", json=postings.body(4, title=title, notes=""))
        assert replaced.status_code == 200, replaced.text
        wait_until(lambda: linkedin()["delivered_version"] == version, 60, f"version {version} at linkedin")
    at_board = sandbox.posting("linkedin", posting_id)
    assert at_board is not None
    assert [(e["operation"], e["state"]) for e in at_board["log"]] == [
        ("CREATE", "SUCCEEDED"),
        ("UPDATE", "SUCCEEDED"),
        ("UPDATE", "SUCCEEDED"),
    ], at_board["log"]
    assert sandbox.applied("linkedin", posting_id) == [0, 1, 2]
    (job,) = _jobs(sandbox, posting_id)  # one job at LinkedIn, holding the last version
    assert (job["version"], job["status"]) == (2, "live"), job
    assert job["title"] == "Staff Backend Engineer, Payments", job
    assert linkedin()["listing"]["id"] == listing["id"]  # the same job, every version


def _jobs(sandbox, posting_id: str) -> list[dict]:
    response = httpx.get(f"{sandbox.url}/_sandbox/linkedin/jobs", params={"posting_id": posting_id})
    assert response.status_code == 200, response.text
    return list(response.json()["jobs"])
