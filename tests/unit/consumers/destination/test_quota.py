"""The daily quota with the time passed in (epoch milliseconds), no waiting."""

import pytest

from consumers.destination.quota import DAY_MS, DailyQuota, QuotaKind, poll_interval_ms, reset_offset_ms

RECORDS, REQUESTS, TASKS = QuotaKind.RECORDS, QuotaKind.REQUESTS, QuotaKind.TASK_STATUS_CALLS
# 2026-12-06 00:00:00 UTC, then 15:30 that day.
MIDNIGHT = 1_796_515_200_000
AFTERNOON = MIDNIGHT + (15 * 60 + 30) * 60_000


def test_linkedins_caps_are_counted_and_never_exceeded_within_a_day():
    quota = DailyQuota({RECORDS: 60_000, REQUESTS: 100_000})
    for _ in range(600):
        assert quota.allows(RECORDS, 100, AFTERNOON) and quota.allows(REQUESTS, 1, AFTERNOON)
        quota.take(RECORDS, 100, AFTERNOON)
        quota.take(REQUESTS, 1, AFTERNOON)
    assert quota.used(RECORDS, AFTERNOON) == 60_000 and quota.left(RECORDS, AFTERNOON) == 0
    assert not quota.allows(RECORDS, 1, AFTERNOON)
    assert quota.left(REQUESTS, AFTERNOON) == 99_400
    assert quota.exhausted(AFTERNOON, {REQUESTS: 1, RECORDS: 1}) == RECORDS
    assert quota.left(TASKS, AFTERNOON) is None and quota.allows(TASKS, 10**9, AFTERNOON)  # no cap


def test_the_day_resets_at_midnight_utc_and_the_count_starts_again():
    quota = DailyQuota({RECORDS: 10})
    quota.take(RECORDS, 10, AFTERNOON)
    assert quota.reset_at(AFTERNOON) == MIDNIGHT + DAY_MS
    assert quota.until_reset_ms(AFTERNOON) == (8 * 60 + 30) * 60_000
    assert not quota.allows(RECORDS, 1, MIDNIGHT + DAY_MS - 1)
    assert quota.left(RECORDS, MIDNIGHT + DAY_MS) == 10
    assert quota.reset_at(MIDNIGHT + DAY_MS) == MIDNIGHT + 2 * DAY_MS


def test_a_reset_at_another_time_of_day():
    quota = DailyQuota({RECORDS: 1}, reset_offset_ms=reset_offset_ms("06:00"))
    assert quota.reset_at(MIDNIGHT) == MIDNIGHT + 6 * 3_600_000
    assert quota.reset_at(AFTERNOON) == MIDNIGHT + DAY_MS + 6 * 3_600_000
    assert reset_offset_ms("00:00") == 0 and reset_offset_ms("23:59") == (23 * 60 + 59) * 60_000


def test_a_scaled_day_for_tests_resets_every_few_seconds():
    quota = DailyQuota({RECORDS: 5}, day_ms=20_000)
    start = 1_000_000_000_000  # a multiple of 20 s
    quota.take(RECORDS, 5, start + 3_000)
    assert quota.reset_at(start + 3_000) == start + 20_000
    assert quota.left(RECORDS, start + 19_999) == 0
    assert quota.left(RECORDS, start + 20_000) == 5


def test_the_reason_names_the_cap_and_the_reset_in_utc():
    quota = DailyQuota({RECORDS: 60_000})
    assert quota.reason(RECORDS, AFTERNOON) == (
        "daily quota: 60000 records a day used; calls resume at the reset, 2026-12-07T00:00:00Z"
    )
    quota.set_share(1, 3)
    assert quota.cap(RECORDS) == 20_000
    assert "(this member's share: 20000)" in quota.reason(RECORDS, AFTERNOON)


def test_each_member_takes_its_share_of_the_groups_daily_caps():
    quota = DailyQuota({RECORDS: 100, TASKS: 10})
    quota.set_share(2, 6)
    assert quota.cap(RECORDS) == 33 and quota.cap(TASKS) == 3
    quota.set_share(6, 6)
    assert quota.cap(RECORDS) == 100


@pytest.mark.parametrize(
    ("open_tasks", "left", "until_reset_ms", "interval_ms"),
    [
        (10, None, 3_600_000, 2_000),  # no cap: the setting's interval
        (10, 300_000, 3_600_000, 2_000),  # plenty left: the setting's interval
        (120, 1_000, 3_600_000, 10_811),  # 3 calls a round (50 ids each): 333 rounds in the hour
        (50, 10, 3_600_000, 360_000),  # 10 calls left for the hour: one every 6 minutes
        (120, 2, 3_600_000, 3_600_000),  # fewer left than one round takes: wait for the reset
        (0, 0, 3_600_000, 2_000),  # nothing open: nothing to stretch
    ],
)
def test_task_status_polling_stretches_to_fit_the_calls_left_until_the_reset(
    open_tasks, left, until_reset_ms, interval_ms
):
    assert poll_interval_ms(2_000, open_tasks, 50, left, until_reset_ms) == interval_ms


def test_a_stretched_poll_never_asks_beyond_the_cap():
    """Polling every interval the function gives, as tasks stay open, never passes the cap."""
    day, cap, now, calls = 3_600_000, 500, 0, 0
    quota = DailyQuota({TASKS: cap}, day_ms=day)
    while now < day:
        per_round = 3  # 120 open tasks, 50 ids a call
        if not quota.allows(TASKS, per_round, now):
            break
        quota.take(TASKS, per_round, now)
        calls += per_round
        now += poll_interval_ms(1_000, 120, 50, quota.left(TASKS, now), quota.until_reset_ms(now))
    assert calls <= cap
    assert calls > cap - 2 * 3  # and used nearly all of it
