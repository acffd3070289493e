"""The retry schedule: the Standard Webhooks example as the production default, Retry-After
honoured within its cap, jitter within its bounds."""

from __future__ import annotations

import pytest

from webhooks.config import SPEC_SCHEDULE_S, DispatcherSettings
from webhooks.schedule import RetrySchedule


def test_the_default_is_the_specifications_schedule_about_three_days_long(monkeypatch):
    monkeypatch.delenv("JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S", raising=False)
    settings = DispatcherSettings()
    assert settings.retry_schedule_s == SPEC_SCHEDULE_S
    assert [w / 60 for w in SPEC_SCHEDULE_S] == [5 / 60, 5, 30, 120, 300, 600, 840, 1200, 1440]
    schedule = RetrySchedule(settings.retry_schedule_s)
    assert schedule.attempts == 10
    total = sum(schedule.wait_s(n) or 0 for n in range(1, 10))
    assert (int(total // 3600), int(total % 3600 // 60), int(total % 60)) == (75, 35, 5)


def test_after_the_last_wait_there_is_no_next_attempt():
    schedule = RetrySchedule((1, 2))
    assert [schedule.wait_s(n) for n in (1, 2, 3)] == [1, 2, None]
    assert schedule.wait_s(0) is None


def test_retry_after_is_honoured_when_longer_and_capped():
    schedule = RetrySchedule((5, 300), retry_after_max_s=3600)
    assert schedule.wait_s(1, retry_after_s=60) == 60
    assert schedule.wait_s(2, retry_after_s=60) == 300  # never sooner than the schedule
    assert schedule.wait_s(1, retry_after_s=10**9) == 3600


def test_jitter_moves_a_wait_within_its_share():
    low = RetrySchedule((100,), jitter=0.1, uniform=lambda a, _b: a)
    high = RetrySchedule((100,), jitter=0.1, uniform=lambda _a, b: b)
    assert (low.wait_s(1), high.wait_s(1)) == (pytest.approx(90), pytest.approx(110))


def test_schedule_settings_take_a_json_list(monkeypatch):
    monkeypatch.setenv("JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S", "[0.5, 1, 2]")
    assert DispatcherSettings().retry_schedule_s == (0.5, 1, 2)
