"""The destination's metrics (names fixed: alert rules and a dashboard read them)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from consumers.destination.budget import RateBudget
from consumers.destination.circuit import CircuitState
from consumers.destination.quota import DailyQuota, QuotaKind

CIRCUIT_STATE = Gauge(
    "jobpost_destination_circuit_state",
    "The destination's circuit: 0 closed, 1 open, 2 probing",
    ["destination"],
)
CIRCUIT_OPENED = Counter(
    "jobpost_destination_circuit_opened_total",
    "Times the destination's circuit opened, by reason (board_down, call_failures)",
    ["destination", "reason"],
)
RATE = Gauge(
    "jobpost_destination_rate_per_minute",
    "The rate this member may send now (kind: records or requests; +Inf: unlimited)",
    ["destination", "kind"],
)
THROTTLED = Counter("jobpost_destination_throttled_total", "429s the board answered", ["destination"])
BATCH_RECORDS = Histogram(
    "jobpost_delivery_batch_records",
    "Records per board call",
    ["destination"],
    buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500),
)
TASKS_IN_PROGRESS = Gauge(
    "jobpost_delivery_tasks_in_progress", "Submitted versions whose board task has not ended", ["destination"]
)
STRANDED = Gauge(
    "jobpost_delivery_stranded_postings",
    "Postings waiting at this member with no clock: queued for a call nothing will make, or in a "
    "waiting state (paused, submitted, retrying) recorded without a next attempt (the watchdog: 0)",
    ["destination"],
)
CALLS = Counter(
    "jobpost_destination_calls_total",
    "Board calls by what came of them (answered, throttled, board_down, failed, token_refused)",
    ["destination", "kind", "outcome"],
)

DAILY_USED = Gauge(
    "jobpost_destination_daily_used",
    "What this member used of the board's daily quota since its last reset (kind: records, requests, "
    "task_status_calls)",
    ["destination", "kind"],
)
DAILY_CAP = Gauge(
    "jobpost_destination_daily_cap",
    "This member's share of the board's daily cap (kind: records, requests, task_status_calls; +Inf: none)",
    ["destination", "kind"],
)
DAILY_QUOTA_HOLDS = Counter(
    "jobpost_destination_daily_quota_holds_total",
    "Times calls to the board were held until the daily reset because a daily cap was reached",
    ["destination"],
)


def publish(destination: str, circuit: CircuitState, budget: RateBudget) -> None:
    """The circuit's state and the rates this member may send at, now."""
    CIRCUIT_STATE.labels(destination).set(CircuitState(circuit).value)
    for kind, rate in (("records", budget.records), ("requests", budget.requests)):
        allowed = budget.allowed(rate)
        RATE.labels(destination, kind).set(float("inf") if allowed is None else allowed)


def publish_quota(destination: str, quota: DailyQuota, now: int | None) -> None:
    """This member's daily caps and, given the time, what it used of them today."""
    for kind in QuotaKind:
        cap = quota.cap(kind)
        DAILY_CAP.labels(destination, kind.value).set(float("inf") if cap is None else cap)
        if now is not None:
            DAILY_USED.labels(destination, kind.value).set(quota.used(kind, now))
