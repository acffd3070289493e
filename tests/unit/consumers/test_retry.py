"""The delivery retry policy with the production numbers (no clock needed: time is an input)."""

import pytest

from consumers.retry import RetryPolicy, RetrySettings


@pytest.fixture
def policy() -> RetryPolicy:
    return RetryPolicy()


def test_waits_double_from_3_s_up_to_60_s(policy):
    assert [policy.next_wait(a, elapsed_s=0) for a in range(1, 10)] == [3, 6, 12, 24, 48, 60, 60, 60, 60]


def test_stops_after_100_attempts(policy):
    assert policy.next_wait(99, elapsed_s=100) == 60
    assert policy.next_wait(100, elapsed_s=100) is None


def test_stops_when_the_next_attempt_would_be_past_one_hour(policy):
    assert policy.next_wait(10, elapsed_s=3600 - 61) == 60
    assert policy.next_wait(10, elapsed_s=3600 - 59) is None


def test_retry_after_is_never_cut_short(policy):
    assert policy.next_wait(1, elapsed_s=0, retry_after_s=30) == 30
    assert policy.next_wait(6, elapsed_s=0, retry_after_s=5) == 60  # ours is longer: ours
    assert policy.next_wait(1, elapsed_s=3590, retry_after_s=30) is None  # would pass the hour


def test_a_full_budget_of_waits_fits_the_hour():
    policy = RetryPolicy()
    elapsed, failed = 0.0, 0
    while (wait := policy.next_wait(failed + 1, elapsed)) is not None:
        failed += 1
        elapsed += wait
    attempts = failed + 1
    # 3+6+12+24+48 = 93 s, then 58 waits of 60 s: the last attempt starts at 3,573 s.
    assert elapsed == 3573
    assert attempts == 64


def test_every_duration_is_a_setting():
    fast = RetryPolicy(RetrySettings(first_wait_s=0.1, max_wait_s=0.4, max_attempts=5, max_elapsed_s=10))
    assert [fast.next_wait(a, 0) for a in range(1, 6)] == [0.1, 0.2, 0.4, 0.4, None]
