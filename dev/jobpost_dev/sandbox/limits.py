"""What a board admits (`PUT /_sandbox/{board}/limits`) and the rolling 60 s window that
counts it.

LinkedIn publishes its throttles per application and day or minute (premium jobs: 2,000
records a minute; learn.microsoft.com/linkedin/talent/job-postings/api/sync-premium-api-jobs),
Indeed a cost budget per client over a rolling 60 s (docs.indeed.com/getstarted/rate-limiting):
both become a records-per-minute and a requests-per-minute budget here, over one rolling
window, beyond which a call is answered 429 with the Retry-After at which the window will
really admit it. A refused call costs nothing, as at Indeed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from schemas.model import Destination

WINDOW_S = 60.0
# Both boards take at most 100 jobs per call: LinkedIn's create-jobs page ("The maximum
# number of jobs which can be submitted during one batch call is 100"), Indeed's Job Sync
# FAQ ("Up to 100 jobs").
MOST_PER_CALL = 100


class Limits(BaseModel):
    """Each `null` is unlimited / off. A field a PUT leaves out takes the board's default."""

    model_config = ConfigDict(extra="forbid")

    token_ttl_s: float | None = Field(default=None, gt=0, description="lifetime of a token issued from now")
    records_per_minute: int | None = Field(default=None, ge=1)
    requests_per_minute: int | None = Field(default=None, ge=1)
    batch_max: int | None = Field(default=None, ge=1, le=MOST_PER_CALL, description="jobs per call at most")
    task_delay_s: float | None = Field(default=None, ge=0, description="LinkedIn: how long a task runs")
    task_fail_probability: float | None = Field(
        default=None, ge=0, le=1, description="LinkedIn: the chance a task ends FAILED"
    )


# The real boards' published figures: LinkedIn tokens live 30 minutes
# (learn.microsoft.com/linkedin/shared/authentication/client-credentials-flow), Indeed's an
# hour (docs.indeed.com/authentication/faq).
DEFAULT_LIMITS = {
    Destination.LINKEDIN.value: Limits(token_ttl_s=1800, batch_max=MOST_PER_CALL),
    Destination.INDEED.value: Limits(token_ttl_s=3600, batch_max=MOST_PER_CALL),
}
LINKEDIN_ONLY = ("task_delay_s", "task_fail_probability")


def limits_for(board: str, asked: Limits) -> Limits:
    """What a PUT sets: the fields it names, the board's defaults for the rest."""
    if board != Destination.LINKEDIN and any(getattr(asked, name) is not None for name in LINKEDIN_ONLY):
        raise ValueError(f"{' and '.join(LINKEDIN_ONLY)} are LinkedIn's (its asynchronous tasks)")
    named: dict[str, Any] = {name: getattr(asked, name) for name in asked.model_fields_set}
    return DEFAULT_LIMITS[board].model_copy(update=named)


@dataclass
class RollingWindow:
    """The calls a board admitted in the last 60 s, with how many records each carried."""

    span_s: float = WINDOW_S
    calls: deque[tuple[float, int]] = field(default_factory=deque)
    records: int = 0  # records of the calls in the window

    def wait_s(self, now: float, size: int, limits: Limits) -> float | None:
        """0: a call of `size` records fits now; otherwise the seconds until it fits, as the
        calls in the window age out of it (None: never, it is larger than the budget)."""
        self._forget(now)
        per_minute = limits.records_per_minute
        if per_minute is not None and size > per_minute:
            return None

        def fits(calls: int, records: int) -> bool:
            requests_ok = limits.requests_per_minute is None or calls + 1 <= limits.requests_per_minute
            return requests_ok and (per_minute is None or records + size <= per_minute)

        calls, records = len(self.calls), self.records
        if fits(calls, records):
            return 0.0
        for at, carried in self.calls:  # oldest first: each leaves the window at at + span
            calls, records = calls - 1, records - carried
            if fits(calls, records):
                return at + self.span_s - now
        return None  # not reached: an empty window fits any call within the budget

    def admit(self, now: float, size: int) -> int:
        """Count an admitted call; the records now in the window."""
        self._forget(now)
        self.calls.append((now, size))
        self.records += size
        return self.records

    def _forget(self, now: float) -> None:
        while self.calls and self.calls[0][0] <= now - self.span_s:
            self.records -= self.calls.popleft()[1]
