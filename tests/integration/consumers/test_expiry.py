"""Expiry and renewal (issue 36, item 3): a posting's `expires_at` closes its job at both boards
at that time, by a close the consumer schedules from its delivery state (so it survives a
consumer that crashes in between); an open posting's LinkedIn job is renewed before the board's
lifetime lapses. The consumers are real processes, the boards the sandbox; LinkedIn's lifetime
is scaled to seconds, the same at the board and in the consumer's settings."""

import time
from datetime import UTC, datetime

import pytest

from schemas.enums import ListingStatus
from tests.integration.consumers.conftest import state_history
from tests.processes import wait_until

pytestmark = pytest.mark.serial  # lifetimes and renewals scaled to seconds

BOARDS = ("linkedin", "indeed")
# Status read back quickly, and a crashed member's partitions moved soon.
QUICK = {
    "JOBPOST_CONSUMER_LISTING_POLL_INTERVAL_S": "0.5",
    "JOBPOST_CONSUMER_LIVE_CHECK_INTERVAL_S": "2",
    "JOBPOST_CONSUMER_SESSION_TIMEOUT_MS": "6000",
}
EXPIRY_S = 30  # the posting expires this long after it is created
ON_TIME_MS = 5_000  # "within a few seconds of it"


def jobs_of(sandbox, board: str, posting_id: str) -> list[dict]:
    return [job for job in sandbox.jobs(board) if job["posting_id"] == posting_id]


def listings(api, posting_id: str) -> dict[str, dict | None]:
    destinations = api.client.deliveries(posting_id)["destinations"]
    return {board: destinations[board]["listing"] for board in BOARDS}


def listed_as(api, posting_id: str, status: str) -> bool:
    """`/deliveries` says the job has `status` at both boards."""
    return all((listing or {}).get("status") == status for listing in listings(api, posting_id).values())


def test_a_posting_closes_at_both_boards_when_it_expires_though_the_consumers_crashed_before(
    api, sandbox, start_consumer
):
    consumers = {board: start_consumer(board, **QUICK) for board in BOARDS}
    expires_ms = round((time.time() + EXPIRY_S) * 1000)
    expires_at = datetime.fromtimestamp(expires_ms / 1000, UTC).isoformat(timespec="milliseconds")
    posting_id = api.client.create(expires_at=expires_at)["id"]
    wait_until(
        lambda: listed_as(api, posting_id, "live"),
        20,
        "the job live at both boards",
        0.5,
    )
    # Both consumers crash and come back with no local state: the close is scheduled by what
    # jobpost.deliveries holds, not by the process that learned of the expiry.
    for board in BOARDS:
        consumers[board].kill()
        start_consumer(board, **QUICK)
    assert time.time() * 1000 < expires_ms - 10_000, "the restart came too late to prove anything"
    assert all(job["status"] == "live" for board in BOARDS for job in jobs_of(sandbox, board, posting_id))

    def closed_everywhere() -> bool:
        held = [job for board in BOARDS for job in jobs_of(sandbox, board, posting_id)]
        return bool(held) and all(job["status"] == "closed" for job in held)

    deadline_s = (expires_ms + ON_TIME_MS) / 1000 - time.time()
    wait_until(closed_everywhere, deadline_s, "closed at both boards", 0.2)
    for board in BOARDS:
        (job,) = jobs_of(sandbox, board, posting_id)  # the one job, closed by us, not left to lapse
        late_ms = job["since"] - expires_ms
        print(f"{board}: closed {late_ms} ms after the expiry")  # the figure of the check
        assert 0 <= late_ms <= ON_TIME_MS, (board, late_ms)
    wait_until(
        lambda: listed_as(api, posting_id, "expired"),
        10,
        "/deliveries to say expired at both boards",
        0.5,
    )
    for board, listing in listings(api, posting_id).items():
        assert listing is not None and listing["reason"] and listing["id"], (board, listing)
        assert listing["since"] >= expires_ms, (board, listing)


LIFETIME_S = 12  # LinkedIn's 180 days, scaled
RENEWAL_S = 12  # what a RENEW adds (30 days)
RENEW_AHEAD_S = 5  # renewed this long before the lifetime ends (7 days)


def test_an_open_posting_is_renewed_at_linkedin_before_its_lifetime_lapses(
    sandbox, start_consumer, versions, kafka
):
    sandbox.limits("linkedin", job_lifetime_s=LIFETIME_S, renewal_s=RENEWAL_S)
    start_consumer(
        "linkedin",
        **QUICK,
        JOBPOST_CONSUMER_LINKEDIN__JOB_LIFETIME_S=str(LIFETIME_S),
        JOBPOST_CONSUMER_LINKEDIN__RENEWAL_S=str(RENEWAL_S),
        JOBPOST_CONSUMER_RENEW_AHEAD_S=str(RENEW_AHEAD_S),
    )
    versions.write(["warm-up"])  # the consumer is running once the board has it
    wait_until(lambda: jobs_of(sandbox, "linkedin", "warm-up"), 60, "the consumer to deliver", 0.2)
    versions.write(["renewed"])
    (job,) = wait_until(lambda: jobs_of(sandbox, "linkedin", "renewed"), 30, "LinkedIn to hold the job", 0.2)
    lapses_ms = job["listed_at"] + LIFETIME_S * 1000

    # Past the first lifetime and the first renewal's: still listed, twice renewed.
    wait_until(lambda: time.time() * 1000 >= lapses_ms + RENEWAL_S * 1000 + 1_000, 60, "two lifetimes")
    (job,) = jobs_of(sandbox, "linkedin", "renewed")
    assert job["status"] == "live", job
    assert job["expires_at"] >= lapses_ms + 2 * RENEWAL_S * 1000, job
    log = sandbox.posting("linkedin", "renewed")["log"]
    renewals = [s for s in log if s["operation"] == "RENEW"]
    assert len(renewals) >= 2 and all(s["state"] == "SUCCEEDED" for s in renewals), log
    first = renewals[0]["submitted_at"]
    assert lapses_ms - RENEW_AHEAD_S * 1000 <= first < lapses_ms, (first, lapses_ms)  # ahead, not late
    assert [s["operation"] for s in log if s["operation"] != "RENEW"] == ["CREATE"]
    # Never seen expired on our side either.
    history = state_history(kafka, "linkedin")["renewed"]
    assert ListingStatus.EXPIRED not in {s.job.status for s in history if s.job is not None}
