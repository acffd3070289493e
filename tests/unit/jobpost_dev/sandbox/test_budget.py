"""The sandbox's budget window, daily counts and limits: pure, with the time given."""

import pytest

from jobpost_dev.sandbox.limits import (
    DEFAULT_LIMITS,
    JOBS,
    TASK_STATUS,
    Limits,
    RollingWindow,
    Today,
    limits_for,
)


def test_calls_are_admitted_up_to_the_records_per_minute_and_then_told_when_they_fit():
    window, limits = RollingWindow(), Limits(records_per_minute=10)
    for at in (0.0, 5.0, 20.0):
        assert window.wait_s(at, 3, limits) == 0
        window.admit(at, 3)
    # 9 records in the window: 2 more fit once the call of t=0 leaves it, at t=60.
    assert window.wait_s(30.0, 2, limits) == pytest.approx(30.0)
    assert window.wait_s(30.0, 1, limits) == 0
    # 5 more need the calls of t=0 and t=5 gone (t=65); 8 more all three (t=80).
    assert window.wait_s(30.0, 5, limits) == pytest.approx(35.0)
    assert window.wait_s(30.0, 8, limits) == pytest.approx(50.0)
    assert window.wait_s(60.0, 2, limits) == 0  # the call of t=0 is out at exactly 60


def test_requests_per_minute_count_calls_whatever_they_carry():
    window, limits = RollingWindow(), Limits(requests_per_minute=2)
    window.admit(0.0, 0)
    window.admit(1.0, 50)
    assert window.wait_s(2.0, 0, limits) == pytest.approx(58.0)
    assert window.wait_s(60.5, 0, limits) == 0


def test_a_call_larger_than_the_whole_budget_never_fits():
    assert RollingWindow().wait_s(0.0, 11, Limits(records_per_minute=10)) is None


def test_no_limits_admit_everything_and_the_window_still_counts():
    window = RollingWindow()
    assert window.wait_s(0.0, 1000, Limits()) == 0
    assert window.admit(0.0, 1000) == 1000
    assert window.admit(59.0, 1) == 1001
    assert window.admit(60.0, 1) == 2  # the call of t=0 left the window


def test_a_put_sets_what_it_names_and_the_boards_defaults_for_the_rest():
    assert DEFAULT_LIMITS["linkedin"].token_ttl_s == 1800 and DEFAULT_LIMITS["indeed"].token_ttl_s == 3600
    set_ = limits_for("linkedin", Limits.model_validate({"records_per_minute": 600, "batch_max": None}))
    assert set_.records_per_minute == 600
    assert set_.batch_max is None  # named null: unlimited
    assert set_.token_ttl_s == 1800  # not named: LinkedIn's 30 minutes
    with pytest.raises(ValueError, match="LinkedIn's"):
        limits_for("indeed", Limits(task_delay_s=1))
    with pytest.raises(ValueError, match="Indeed's"):
        limits_for("linkedin", Limits(indexing_delay_s=1))


def test_a_day_counts_records_requests_and_status_calls_apart_and_starts_again_at_midnight():
    today, limits = Today(), Limits(records_per_day=10, requests_per_day=2, task_status_calls_per_day=1)
    today.roll(19_000)
    assert today.over(JOBS, 10, limits) is None
    today.count(JOBS, 8)
    assert today.over(JOBS, 3, limits) == "10 records a day"
    today.count(JOBS, 1)
    assert today.over(JOBS, 1, limits) == "2 requests a day"
    today.count(TASK_STATUS, 0)
    assert today.over(TASK_STATUS, 0, limits) == "1 task status calls a day"
    today.roll(19_000)
    assert today.records == 9
    today.roll(19_001)
    assert today.to_json() == {"records": 0, "requests": 0, "task_status_calls": 0, "status_calls": 0}
