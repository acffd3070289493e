"""A daily cap of records (issue 36, item 4): LinkedIn's consumer never calls beyond it, its
lanes show `paused` with the reason `daily quota` until the reset, and after the reset every
version goes, in order, none charged an attempt for the hold. The day is scaled to a few
seconds (`quota_day_s`); versions are written straight to jobpost.postings; the consumer is
a real process; the board is the sandbox, whose own log says when each record arrived."""

import time

import pytest

from schemas.enums import DeliveryStatus
from schemas.topics import Component
from tests.integration.consumers.conftest import dead_letters, metric, state_history
from tests.processes import free_port, wait_until

pytestmark = pytest.mark.serial  # a day scaled to 20 s, windows of 0.5-3 s

CAP = 5  # records a day
DAY_S = 20  # the scaled day: days start at multiples of 20 s of the epoch (00:00 UTC is one)
POSTINGS = ["quota-a", "quota-b", "quota-c"]
VERSIONS = 4  # 12 versions: 5 the first day, 5 the next, 2 the third


def day_of(epoch_ms: float) -> int:
    return int(epoch_ms // (DAY_S * 1000))


def arrivals(sandbox, posting_ids: list[str]) -> list[int]:
    """When each record reached LinkedIn (the sandbox's log: every submission, epoch ms)."""
    logs = [(sandbox.posting("linkedin", p) or {"log": []})["log"] for p in posting_ids]
    return sorted(submission["submitted_at"] for log in logs for submission in log)


def test_a_daily_cap_of_records_holds_linkedin_until_the_reset_then_every_version_goes_in_order(
    sandbox, start_consumer, versions, kafka, topics
):
    port = free_port()
    start_consumer(
        "linkedin",
        JOBPOST_CONSUMER_LINKEDIN__RECORDS_PER_DAY=str(CAP),
        JOBPOST_CONSUMER_LINKEDIN__QUOTA_DAY_S=str(DAY_S),
        JOBPOST_CONSUMER_METRICS_PORT=str(port),
    )
    versions.write(["quota-warm-up"])  # the consumer is running once the board has it
    wait_until(lambda: sandbox.applied("linkedin", "quota-warm-up") == [0], 60, "the consumer to deliver")
    # The scenario starts with a fresh day, so every call it makes is far from a reset, and a
    # day after the warm-up's, whose record would otherwise count against the first day's cap.
    warm_up_day = day_of(arrivals(sandbox, ["quota-warm-up"])[0])
    wait_until(
        lambda: day_of(time.time() * 1000) > warm_up_day and 0.5 <= time.time() % DAY_S <= 3,
        2 * DAY_S + 5,
        "a fresh (scaled) day after the warm-up's",
    )
    first_day = day_of(time.time() * 1000)
    for _ in range(VERSIONS):
        versions.write(POSTINGS)

    # The first day: the cap's records, then nothing until the reset, every lane that waits paused.
    wait_until(lambda: len(arrivals(sandbox, POSTINGS)) >= CAP, DAY_S - 5, "the day's records")
    reset_ms = (first_day + 1) * DAY_S * 1000
    wait_until(lambda: time.time() * 1000 >= reset_ms - 1_500, DAY_S, "the end of the day")
    assert len(arrivals(sandbox, POSTINGS)) == CAP  # none beyond the cap, seen by the board
    held = [
        state
        for history in state_history(kafka, "linkedin").values()
        for state in history
        if state.status == DeliveryStatus.PAUSED
    ]
    assert held, "no lane reported paused during the hold"
    assert all((s.paused_reason or "").startswith(f"daily quota: {CAP} records a day used") for s in held)
    assert {s.next_attempt_at for s in held} == {reset_ms}
    assert metric(port, "jobpost_destination_daily_cap", 'destination="linkedin",kind="records"') == CAP
    assert metric(port, "jobpost_destination_daily_quota_holds_total", 'destination="linkedin"') == 1

    # After the resets: every version, in order, once; no day beyond the cap.
    for posting_id in POSTINGS:
        wait_until(
            lambda: sandbox.applied("linkedin", posting_id) == list(range(VERSIONS)),
            3 * DAY_S,
            f"every version of {posting_id}",
        )
    per_day: dict[int, int] = {}
    for at in arrivals(sandbox, POSTINGS):
        per_day[day_of(at)] = per_day.get(day_of(at), 0) + 1
    assert per_day == {first_day: CAP, first_day + 1: CAP, first_day + 2: VERSIONS * len(POSTINGS) - 2 * CAP}
    stats = sandbox.stats("linkedin")
    assert stats["records"] == 1 + VERSIONS * len(POSTINGS) and stats["throttled"] == 0
    # The hold was charged to no posting: one attempt for each version, no dead letter.
    final = state_history(kafka, "linkedin")
    for posting_id in POSTINGS:
        delivered = [s for s in final[posting_id] if s.status == DeliveryStatus.DELIVERED]
        assert sorted({s.delivered_version for s in delivered}) == list(range(VERSIONS))
        assert {s.attempts for s in delivered} == {1}, posting_id
    assert dead_letters(kafka, topics.dlq(Component("linkedin"))) == []
