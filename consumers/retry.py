"""The delivery retry policy, built from tenacity's strategies.

The lane owns the loop (a posting waiting for its next attempt holds no worker, and its
attempt count and first-attempt time survive restarts in `jobpost.deliveries`), so the
policy is evaluated by the lane's rules (`rules.next_step`) on a small state object rather
than by tenacity's own loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field
from tenacity import stop_after_attempt, stop_before_delay, wait_exponential


class RetrySettings(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)

    first_wait_s: float = Field(default=3.0, gt=0)
    """the wait after the first failed attempt (doubled each time)"""
    max_wait_s: float = Field(default=60.0, gt=0)
    """the longest wait between attempts"""
    max_attempts: int = Field(default=100, ge=1)
    """attempts of a version before it is a dead letter"""
    max_elapsed_s: float = Field(default=3600.0, gt=0)
    """time since the first attempt before it is a dead letter (the whole board held back: not counted)"""


@dataclass
class _State:
    """The attributes of tenacity's RetryCallState that its wait and stop strategies read."""

    attempt_number: int
    seconds_since_start: float
    upcoming_sleep: float = 0.0


class RetryPolicy:
    def __init__(self, settings: RetrySettings | None = None) -> None:
        s = settings or RetrySettings()
        self._wait = wait_exponential(multiplier=s.first_wait_s, exp_base=2, max=s.max_wait_s)
        self._stop = stop_after_attempt(s.max_attempts) | stop_before_delay(s.max_elapsed_s)

    def next_wait(self, attempts: int, elapsed_s: float, retry_after_s: float | None = None) -> float | None:
        """Seconds to wait after `attempts` failed attempts, the first `elapsed_s` ago;
        None when the budget is spent. A board's Retry-After is never cut short."""
        state = _State(attempt_number=attempts, seconds_since_start=elapsed_s)
        state.upcoming_sleep = max(self._wait(state), retry_after_s or 0.0)  # type: ignore[arg-type]
        if self._stop(state):  # type: ignore[arg-type]
            return None
        return state.upcoming_sleep
