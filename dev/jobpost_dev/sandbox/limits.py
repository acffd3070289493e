"""What a board admits and how long its jobs take (`PUT /_sandbox/{board}/limits`), the
rolling 60 s window and the day's counts that hold a board to them.

LinkedIn publishes its throttles per application, per minute and per day (premium jobs:
"2,000 records/minute", "60,000 records" and "100,000 requests" a day; task status "300,000
calls/day"; job posting status "1,000,000 calls/day"; "These limits reset at midnight UTC
every day"; "Rate limited requests will receive a 429 response": sync-premium-api-jobs,
check-job-taskstatus, check-job-posting-status, api-guide/concepts/rate-limits). Indeed
charges a cost budget per client over a rolling 60 s ("60 seconds after a client performs
an operation, that operation's cost is removed from the rolling total":
docs.indeed.com/getstarted/rate-limiting). Here both become records and requests per minute
over one rolling window, and LinkedIn's per-day caps, beyond which a call is answered 429
with the Retry-After at which it would really be admitted. A refused call costs nothing.

Budgets are off until a test sets them (the real figures above are for premium jobs; basic
ones are not published); lifetimes and windows default to the documents' figures.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

LINKEDIN, INDEED = "linkedin", "indeed"
NAMES = {LINKEDIN: "LinkedIn", INDEED: "Indeed"}
WINDOW_S = 60.0
# Both boards take at most 100 jobs per call: LinkedIn's create-jobs page ("The maximum
# number of jobs which can be submitted during one batch call is 100"), Indeed's Job Sync
# FAQ ("You can create up to 100 jobs per request").
MOST_PER_CALL = 100
# LinkedIn: "the default expiration is 180 days for basic ... jobs" (job-posting-api-schema,
# expireAt); RENEW will "extend the expiry date of the listed job by 30 days" (job_posting_v2.yaml).
LINKEDIN_LIFETIME_S = 180 * 86_400
LINKEDIN_RENEWAL_S = 30 * 86_400
# Indeed: "You can reactivate a job for 30 days after it's expired" (createSourcedJobPostings).
INDEED_REACTIVATION_S = 30 * 86_400


class Limits(BaseModel):
    """Each `null` is unlimited / off. A field a PUT leaves out takes the board's default."""

    model_config = ConfigDict(extra="forbid")

    token_ttl_s: float | None = Field(default=None, gt=0, description="lifetime of a token issued from now")
    records_per_minute: int | None = Field(default=None, ge=1)
    requests_per_minute: int | None = Field(default=None, ge=1)
    batch_max: int | None = Field(default=None, ge=1, le=MOST_PER_CALL, description="jobs per call at most")
    # LinkedIn's only.
    records_per_day: int | None = Field(default=None, ge=1, description="LinkedIn: jobs posted per UTC day")
    requests_per_day: int | None = Field(
        default=None, ge=1, description="LinkedIn: simpleJobPostings calls per UTC day"
    )
    task_status_calls_per_day: int | None = Field(
        default=None, ge=1, description="LinkedIn: simpleJobPostingTasks calls per UTC day"
    )
    status_calls_per_day: int | None = Field(
        default=None, ge=1, description="LinkedIn: jobPostingStatus calls per UTC day"
    )
    task_delay_s: float | None = Field(default=None, ge=0, description="LinkedIn: how long a task runs")
    task_fail_probability: float | None = Field(
        default=None, ge=0, le=1, description="LinkedIn: the chance a task ends FAILED (a catch-all error)"
    )
    job_lifetime_s: float | None = Field(
        default=None, gt=0, description="LinkedIn: a job's life from its listedAt (null: for ever)"
    )
    renewal_s: float | None = Field(default=None, gt=0, description="LinkedIn: what a RENEW adds")
    # Indeed's only.
    indexing_delay_s: float | None = Field(
        default=None, ge=0, description="Indeed: from received to live (or rejected)"
    )
    rejection_probability: float | None = Field(
        default=None, ge=0, le=1, description="Indeed: the chance a received job is rejected at indexing"
    )
    reactivation_window_s: float | None = Field(
        default=None, ge=0, description="Indeed: how long after its expiry an upsert reactivates a job"
    )


# The real boards' published figures: LinkedIn tokens live 30 minutes ("An access token has a
# lifespan of 30 mins": create-jobs), Indeed's an hour ("Access tokens expire after one hour":
# job-sync-api/faq).
DEFAULT_LIMITS = {
    LINKEDIN: Limits(
        token_ttl_s=1800,
        batch_max=MOST_PER_CALL,
        job_lifetime_s=LINKEDIN_LIFETIME_S,
        renewal_s=LINKEDIN_RENEWAL_S,
    ),
    INDEED: Limits(token_ttl_s=3600, batch_max=MOST_PER_CALL, reactivation_window_s=INDEED_REACTIVATION_S),
}
ONLY = {
    LINKEDIN: (
        "records_per_day",
        "requests_per_day",
        "task_status_calls_per_day",
        "status_calls_per_day",
        "task_delay_s",
        "task_fail_probability",
        "job_lifetime_s",
        "renewal_s",
    ),
    INDEED: ("indexing_delay_s", "rejection_probability", "reactivation_window_s"),
}


def limits_for(board: str, asked: Limits) -> Limits:
    """What a PUT sets: the fields it names, the board's defaults for the rest."""
    for other, names in ONLY.items():
        named = [name for name in names if getattr(asked, name) is not None]
        if other != board and named:
            raise ValueError(f"{', '.join(named)}: {NAMES[other]}'s only")
    named_fields: dict[str, Any] = {name: getattr(asked, name) for name in asked.model_fields_set}
    return DEFAULT_LIMITS[board].model_copy(update=named_fields)


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


# What a call to LinkedIn counts against, per day: its jobs calls, or one of its status reads.
JOBS, TASK_STATUS, JOB_STATUS = "jobs", "task_status", "job_status"


@dataclass
class Today:
    """LinkedIn's counts for the current UTC day of the sandbox's clock, reset at 00:00."""

    day: int = -1
    records: int = 0
    requests: int = 0
    task_status_calls: int = 0
    status_calls: int = 0

    def roll(self, day: int) -> None:
        if day != self.day:
            self.day, self.records, self.requests = day, 0, 0
            self.task_status_calls = self.status_calls = 0

    def over(self, kind: str, size: int, limits: Limits) -> str | None:
        """Which daily cap a call of `kind` carrying `size` records would pass, or None."""
        caps: list[tuple[int | None, int, int, str]] = {
            JOBS: [
                (limits.requests_per_day, self.requests, 1, "requests"),
                (limits.records_per_day, self.records, size, "records"),
            ],
            TASK_STATUS: [(limits.task_status_calls_per_day, self.task_status_calls, 1, "task status calls")],
            JOB_STATUS: [(limits.status_calls_per_day, self.status_calls, 1, "job posting status calls")],
        }[kind]
        for cap, used, more, what in caps:
            if cap is not None and used + more > cap:
                return f"{cap} {what} a day"
        return None

    def count(self, kind: str, size: int) -> None:
        if kind == JOBS:
            self.requests += 1
            self.records += size
        elif kind == TASK_STATUS:
            self.task_status_calls += 1
        else:
            self.status_calls += 1

    def to_json(self) -> dict[str, int]:
        return {
            "records": self.records,
            "requests": self.requests,
            "task_status_calls": self.task_status_calls,
            "status_calls": self.status_calls,
        }
