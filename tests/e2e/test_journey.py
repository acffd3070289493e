"""The README journey, against the whole system started the way `make run` starts it."""

import os
import signal

import httpx

from tests.client import ApiClient
from tests.e2e.conftest import System
from tests.processes import wait_until


def titles(api: ApiClient, q: str) -> list[tuple[str, int]] | None:
    """What a title search finds; None while the new index starts (503)."""
    page = api.search(q, expect=(200, 503))
    return [(i["id"], i["version"]) for i in page["items"]] if page.status_code == 200 else None


def progress(api: ApiClient, posting_id: str) -> dict:
    return api.deliveries(posting_id)["destinations"]


def test_the_readme_journey(system: System):
    api = system.client
    posting_id = api.create(title="Senior Data Engineer")["id"]
    for title in ("Staff Data Engineer", "Principal Data Engineer"):
        api.replace(posting_id, title=title)

    wait_until(lambda: titles(api, "principal") == [(posting_id, 2)], 60, "search to find version 2")
    for board in ("linkedin", "indeed"):
        wait_until(
            lambda: system.board(board, posting_id)["versions"] == [0, 1, 2], 60, f"{board} to apply 0..2"
        )
    destinations = ("linkedin", "indeed", "search")
    reported = lambda: all(progress(api, posting_id)[d]["delivered_version"] == 2 for d in destinations)  # noqa: E731
    wait_until(reported, 30, "deliveries to report version 2")

    # LinkedIn fails; Indeed proceeds while LinkedIn retries.
    assert httpx.put(f"{system.sandbox}/_sandbox/linkedin/faults", json={"mode": "error"}).status_code == 200
    api.replace(posting_id, title="Head of Data")
    wait_until(
        lambda: system.board("indeed", posting_id)["versions"] == [0, 1, 2, 3], 30, "Indeed to apply v3"
    )
    wait_until(lambda: progress(api, posting_id)["linkedin"]["status"] == "retrying", 30, "LinkedIn retrying")

    # A component killed meanwhile is restarted by the supervisor.
    (indeed_pid,) = system.children("consumer indeed")
    os.kill(indeed_pid, signal.SIGKILL)
    wait_until(lambda: system.children("consumer indeed") not in ([], [indeed_pid]), 30, "indeed restarted")

    assert httpx.put(f"{system.sandbox}/_sandbox/linkedin/faults", json={"mode": "none"}).status_code == 200
    wait_until(
        lambda: system.board("linkedin", posting_id)["versions"] == [0, 1, 2, 3], 60, "LinkedIn catch-up"
    )

    assert api.delete(posting_id) == {"id": posting_id, "version": 4, "status": "deleted"}
    for board in ("linkedin", "indeed"):
        wait_until(lambda: system.board(board, posting_id)["status"] == "closed", 60, f"{board} to close it")
    assert system.board("indeed", posting_id)["versions"] == [0, 1, 2, 3, 4]  # exactly once each, in order
    wait_until(lambda: titles(api, "head") == [], 60, "search to drop the deleted posting")
    api.get(posting_id, expect=410)

    metrics = httpx.get(f"{system.url}/metrics").text
    for series in ("jobpost_api_request_seconds_count", "jobpost_sequencer_batch_commands_count"):
        assert series in metrics
    linkedin, indeed, indexer = (httpx.get(url).text for url in system.metrics)
    assert 'jobpost_deliveries_total{destination="linkedin",outcome="delivered"}' in linkedin
    assert 'jobpost_delivery_attempts_total{destination="indeed"}' in indeed
    assert 'jobpost_indexer_documents_total{outcome="indexed"}' in indexer
    for url in system.metrics:  # published with the next commit (every second)
        wait_until(lambda: "jobpost_consumer_lag{" in httpx.get(url).text, 10, f"consumer lag at {url}")


def test_stopping_make_run_leaves_no_process_behind(system: System):
    components = {
        c: system.children(c) for c in ("api", "sandbox", "consumer linkedin", "consumer indeed", "indexer")
    }
    assert all(len(pids) == 1 for pids in components.values()), components

    system.process.popen.send_signal(signal.SIGTERM)
    system.process.popen.wait(60)

    for command in components:
        assert system.children(command) == [], command
