"""A posting edited faster than LinkedIn confirms (issue 40, item 2): with conflation (the
default) LinkedIn ends with the newest version within one to two task times after the edits
stop, the versions it holds only increase, and the versions skipped are in the posting's
timeline with why; delivering every version sends each, in order. Through the real API, the
real LinkedIn consumer, real Kafka and the sandbox, whose tasks take `task_delay_s`.

The sandbox numbers contents as it first sees them, not as jobpost does, so which version
LinkedIn holds is read from its job's title (edit n is titled "Platform Engineer n" and is
version n)."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable

import httpx
import pytest

from tests import postings
from tests.processes import ApiProcess, wait_until

WHY = re.compile(r"superseded by v(\d+) while the board was confirming v(\d+)")
TITLE = re.compile(r"Platform Engineer (\d+)")


def edit_for(http: httpx.Client, posting_id: str, seconds: float, each: Callable[[], object]) -> int:
    """Replace the posting every 200 ms for `seconds` (a load at a fixed pace, not a wait for
    anything), calling `each` between edits; the newest version."""
    started, version = time.monotonic(), 0
    for n in itertools.count(1):
        due = started + n * 0.2
        if due > started + seconds:
            return version
        each()
        time.sleep(max(0.0, due - time.monotonic()))  # the pace of the edits
        answer = http.put(f"/postings/{posting_id}", json=postings.body(5, title=f"Platform Engineer {n}"))
        assert answer.status_code == 200, answer.text
        version = answer.json()["version"]
        assert version == n, answer.json()
    raise AssertionError("unreachable")


class LinkedIn:
    """The version LinkedIn's job for the posting holds, read from its title, each time asked
    (`held`, in the order seen)."""

    def __init__(self, sandbox, posting_id: str) -> None:
        self.url = f"{sandbox.url}/_sandbox/linkedin/jobs"
        self.posting_id = posting_id
        self.held: list[int] = []

    def version(self) -> int | None:
        answer = httpx.get(self.url, params={"posting_id": self.posting_id}, timeout=10)
        assert answer.status_code == 200, answer.text
        jobs = answer.json()["jobs"]
        if not jobs:
            return None
        (job,) = jobs  # one job per posting, updated in place
        found = TITLE.fullmatch(job["title"])
        assert found is not None, job
        self.held.append(int(found[1]))
        return self.held[-1]


def created(http: httpx.Client, sandbox) -> tuple[str, LinkedIn]:
    answer = http.post("/postings", json=postings.body(5, title="Platform Engineer 0"))
    assert answer.status_code == 201, answer.text
    posting_id: str = answer.json()["id"]
    board = LinkedIn(sandbox, posting_id)
    wait_until(lambda: board.version() == 0, 60, "LinkedIn to hold version 0")
    return posting_id, board


def timeline(http: httpx.Client, posting_id: str) -> dict:
    answer = http.get(f"/postings/{posting_id}/timeline")
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.serial  # LinkedIn's pace counted in versions within a bound in seconds
def test_a_posting_edited_every_200_ms_for_30_s_converges_at_linkedins_pace(
    api: ApiProcess, sandbox, start_consumer
):
    sandbox.limits("linkedin", task_delay_s=10)
    start_consumer("linkedin", JOBPOST_CONSUMER_DELIVER_EVERY_VERSION="false")
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=15)
    posting_id, board = created(http, sandbox)

    newest = edit_for(http, posting_id, 30, board.version)
    stopped = time.monotonic()
    assert newest >= 100, newest  # the edits kept their pace
    # The version LinkedIn confirms when the edits stop ends first, then the newest's task.
    wait_until(lambda: board.version() == newest, 40, f"LinkedIn to hold v{newest}")
    converged_s = time.monotonic() - stopped
    held = sorted(set(board.held))
    print(f"\nLinkedIn held v{newest} {converged_s:.1f} s after the edits stopped; it held {held}")
    assert converged_s <= 25  # two task times and the polls: the one at the board, then the newest
    assert board.held == sorted(board.held), board.held  # never backwards
    applied = sandbox.applied("linkedin", posting_id)
    assert applied == list(range(len(applied))), applied  # no content applied twice, none older again
    assert len(applied) <= 12, applied  # about one version a task time, not one an edit

    # The timeline (its last 50 versions) says what became of each at LinkedIn, and why.
    def at_linkedin() -> tuple[dict[int, str], list[int]]:
        events = [e for e in timeline(http, posting_id)["events"] if e["destination"] == "linkedin"]
        skipped = {e["version"]: e["error"] for e in events if e["outcome"] == "skipped"}
        return skipped, [e["version"] for e in events if e["outcome"] == "delivered"]

    kept = {line["version"] for line in timeline(http, posting_id)["versions"]}
    wait_until(lambda: newest in at_linkedin()[1], 30, f"v{newest} delivered in the timeline")
    skipped, delivered = at_linkedin()
    assert delivered == sorted(delivered) and not set(skipped) & set(delivered), (skipped, delivered)
    assert kept <= set(skipped) | set(delivered), kept - set(skipped) - set(delivered)
    assert len(kept & set(skipped)) >= 40, skipped  # most of the last 50 gave way to a newer one
    for version in kept & set(skipped):
        why = WHY.fullmatch(skipped[version])
        assert why is not None, skipped[version]
        by, confirming = int(why[1]), int(why[2])
        assert confirming < version < by <= newest and by in board.held + delivered, skipped[version]


def test_delivering_every_version_sends_each_in_order(api: ApiProcess, sandbox, start_consumer):
    sandbox.limits("linkedin", task_delay_s=1)
    start_consumer("linkedin", JOBPOST_CONSUMER_DELIVER_EVERY_VERSION="true")
    http = httpx.Client(base_url=api.url, headers=api.headers, timeout=15)
    posting_id, board = created(http, sandbox)

    newest = edit_for(http, posting_id, 2, board.version)
    wait_until(lambda: board.version() == newest, 90, f"LinkedIn to hold v{newest}")
    assert board.held == sorted(board.held), board.held
    assert sandbox.applied("linkedin", posting_id) == list(range(newest + 1))  # each content once

    def at_linkedin() -> list[tuple[int, str]]:
        events = timeline(http, posting_id)["events"]
        return [(e["version"], e["outcome"]) for e in events if e["destination"] == "linkedin"]

    wait_until(lambda: (newest, "delivered") in at_linkedin(), 30, f"v{newest} delivered in the timeline")
    delivered = [v for v, outcome in at_linkedin() if outcome == "delivered"]
    assert delivered == list(range(newest + 1)), at_linkedin()
    assert all(outcome != "skipped" for _, outcome in at_linkedin()), at_linkedin()
