"""The destination's metrics (names fixed: alert rules and a dashboard read them)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from consumers.destination.budget import RateBudget
from consumers.destination.circuit import CircuitState

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


def publish(destination: str, circuit: CircuitState, budget: RateBudget) -> None:
    """The circuit's state and the rates this member may send at, now."""
    CIRCUIT_STATE.labels(destination).set(CircuitState(circuit).value)
    for kind, rate in (("records", budget.records), ("requests", budget.requests)):
        allowed = budget.allowed(rate)
        RATE.labels(destination, kind).set(float("inf") if allowed is None else allowed)
