"""After every fault clears, every posting resumes: each of the sandbox's fault modes at both
boards at once, for a few seconds while postings are created and replaced, then cleared.

Through the real API, both real delivery consumers, real Kafka and the sandbox. Afterwards
every version that is not a rejection is at its board, in order, once, within a bound; a
rejected version is dead-lettered and the posting's next version delivered (a posting whose
first version was refused is the listable-postings work's: LinkedIn needs a CREATE); at no time
did `/postings/{id}/deliveries` show a posting paused, submitted or retrying without a next
attempt, nor the consumers' watchdog a posting with no clock. The time from the fault
cleared to the last version delivered is written to tests/artifacts/fault_matrix.tsv.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from schemas.topics import Component
from tests import postings
from tests.integration.consumers.conftest import BoardDelivery, dead_letters, metric
from tests.processes import ApiProcess, free_port, wait_until

BOARDS = ("linkedin", "indeed")
FAULT_S = 4.0
CONVERGED_WITHIN_S = 60
WAITING = ("paused", "submitted", "retrying")
ARTIFACT = Path(__file__).resolve().parents[2] / "artifacts" / "fault_matrix.tsv"


def posting(title: str) -> dict:
    return postings.body(len(title), title=title, notes="")


def create(http: httpx.Client, title: str) -> str:
    response = http.post("/postings", json=posting(title))
    assert response.status_code == 201, response.text
    return response.json()["id"]


def replace(http: httpx.Client, posting_id: str, title: str) -> None:
    response = http.put(f"/postings/{posting_id}", json=posting(title))
    assert response.status_code == 200, response.text


class Watch:
    """Samples every posting's deliveries; remembers any waiting state shown without a clock."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http
        self.without_clock: list[tuple[str, str, dict]] = []

    def sample(self, postings: list[str]) -> dict[str, dict[str, dict]]:
        seen: dict[str, dict[str, dict]] = {}
        for posting_id in postings:
            response = self.http.get(f"/postings/{posting_id}/deliveries")
            assert response.status_code == 200, response.text
            boards = response.json()["destinations"]
            seen[posting_id] = boards
            for board in BOARDS:
                entry = boards[board]
                if entry["status"] in WAITING and entry["next_attempt_at"] is None:
                    self.without_clock.append((posting_id, board, entry))
        return seen


@pytest.mark.parametrize(
    "mode", ["error", "timeout", "rate_limit", "reject", "lose_response", "malformed", "outage"]
)
def test_after_the_fault_clears_every_posting_resumes(
    mode, api: ApiProcess, sandbox, start_consumer, kafka, topics
):
    ports = {board: free_port() for board in BOARDS}
    for board in BOARDS:
        start_consumer(board, JOBPOST_CONSUMER_METRICS_PORT=str(ports[board]))
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=15)
    watch = Watch(http)

    warm = create(http, "Site Reliability Engineer")  # both consumers up and delivering
    for board in BOARDS:
        wait_until(lambda: sandbox.applied(board, warm) == [0], 60, f"{board} to deliver a first posting")

    rejected = create(http, "Data Engineer") if mode == "reject" else None
    if rejected is not None:  # its second version refused by both boards, the others' untouched
        for board in BOARDS:
            wait_until(lambda: sandbox.applied(board, rejected) == [0], 60, f"{board} to deliver {rejected}")
            sandbox.faults(board, "reject", posting_ids=[rejected])
        replace(http, rejected, "Data Engineer, Platform")
    else:
        for board in BOARDS:
            sandbox.faults(board, mode, retry_after_s=1)

    started = time.monotonic()
    postings = [create(http, f"Backend Engineer {n}") for n in range(6)]
    for n, posting_id in enumerate(postings):
        replace(http, posting_id, f"Senior Backend Engineer {n}")
    while time.monotonic() - started < FAULT_S:
        watch.sample(postings)
        time.sleep(0.5)
    for board in BOARDS:
        sandbox.faults(board, "none")
    cleared = time.monotonic()
    if rejected is not None:
        for board in BOARDS:
            dlq = topics.dlq(Component(board))
            wait_until(lambda: dead_letters(kafka, dlq), 30, f"{board}'s dead letter")
        replace(http, rejected, "Data Engineer, Platform (corrected)")

    expected = {posting_id: [0, 1] for posting_id in postings}
    if rejected is not None:
        expected[rejected] = [0, 2]  # version 1 dead-lettered, version 2 delivered

    def delivered(seen: dict[str, dict[str, dict]]) -> bool:
        return all(
            (seen[p][b]["status"], seen[p][b]["delivered_version"]) == ("delivered", versions[-1])
            for p, versions in expected.items()
            for b in BOARDS
        )

    def converged() -> bool:
        at_boards = all(sandbox.applied(b, p) == v for p, v in expected.items() for b in BOARDS)
        return delivered(watch.sample(list(expected))) and at_boards

    try:
        wait_until(converged, CONVERGED_WITHIN_S, f"every version at both boards, and said so, after {mode}")
    except AssertionError as exc:
        seen = watch.sample(list(expected))
        behind = {
            (p, b): (sandbox.applied(b, p), seen[p][b])
            for p, v in expected.items()
            for b in BOARDS
            if sandbox.applied(b, p) != v or seen[p][b]["delivered_version"] != v[-1]
        }
        raise AssertionError(f"{exc}; behind (applied at the board, our deliveries): {behind}") from None
    took = time.monotonic() - cleared
    unclocked = watch.without_clock
    assert unclocked == [], f"waiting states shown without a next attempt: {unclocked[:3]}"
    for board in BOARDS:
        stranded = metric(ports[board], "jobpost_delivery_stranded_postings", f'destination="{board}"')
        assert stranded == 0, f"{board}'s watchdog counts {stranded} postings with no clock"
    if rejected is not None:
        for board in BOARDS:
            letters = dead_letters(kafka, topics.dlq(Component(board)))
            assert [letter["key"] for letter in letters] == [rejected.encode()]

    ARTIFACT.parent.mkdir(exist_ok=True)
    with ARTIFACT.open("a") as out:
        out.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\t{mode}\t{took:.1f}\n")


@pytest.mark.parametrize("refusal", ["task_failed", "element_refused"])
def test_a_posting_linkedin_refused_first_is_created_by_its_next_version_and_listed(
    refusal, api: ApiProcess, sandbox, start_consumer, kafka
):
    """LinkedIn refuses a posting's first version (its task ends FAILED, or the element is
    refused at once): that version is dead-lettered and LinkedIn holds no job. The next
    version, once LinkedIn answers again, goes as a CREATE (an UPDATE of a job LinkedIn never
    made would fail for ever) and is listed; the one after it is an UPDATE of that job."""
    for board in BOARDS:
        start_consumer(board, JOBPOST_CONSUMER_LISTING_POLL_INTERVAL_S="0.5")
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=15)
    if refusal == "task_failed":
        sandbox.limits("linkedin", task_fail_probability=1)
    else:
        sandbox.faults("linkedin", "reject")

    posting_id = create(http, "Data Engineer")
    linkedin = BoardDelivery(http, posting_id, "linkedin")

    refused = linkedin.refused(kafka)  # the first version
    assert (refused["status"], refused["delivered_version"]) == ("failed", None), refused
    if refusal == "task_failed":  # the board's own words, and nothing held at the board
        assert refused["listing"]["status"] == "rejected", refused
        assert "unexpected error" in refused["listing"]["reason"], refused
        assert refused["listing"]["id"] is None, refused
    assert sandbox.applied("linkedin", posting_id) == []

    sandbox.limits("linkedin")  # the board's defaults: tasks succeed
    sandbox.faults("linkedin", "none")
    replace(http, posting_id, "Data Engineer, Platform")

    wait_until(lambda: linkedin.live(1), CONVERGED_WITHIN_S, "the corrected version live at linkedin")
    live = linkedin()["listing"]
    # What LinkedIn took, in its own numbering of the contents it saw: the corrected version,
    # sent as a CREATE (not an UPDATE of a job that never existed), is the one job it holds.
    at_board = sandbox.posting("linkedin", posting_id)
    assert at_board is not None
    sent = [(entry["operation"], entry["state"]) for entry in at_board["log"]]
    assert sent[-1] == ("CREATE", "SUCCEEDED") and len(at_board["versions"]) == 1, sent
    assert all(operation == "CREATE" for operation, _ in sent), sent
    assert live["id"].startswith("urn:li:jobPosting:"), live
    assert live["url"].startswith("https://"), live

    replace(http, posting_id, "Data Engineer, Streaming Platform")
    wait_until(
        lambda: len(sandbox.applied("linkedin", posting_id)) == 2, 30, "the next version applied at linkedin"
    )
    at_board = sandbox.posting("linkedin", posting_id)
    assert at_board is not None
    assert at_board["log"][-1]["operation"] == "UPDATE"
    wait_until(lambda: linkedin()["delivered_version"] == 2, 30, "version 2 said delivered")
    assert linkedin()["listing"]["id"] == live["id"]  # the same job
    assert sandbox.applied("indeed", posting_id) == [0, 1, 2]
