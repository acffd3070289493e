"""What the dispatcher counts, for Prometheus."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

DELIVERIES = Counter(
    "jobpost_webhook_deliveries_total",
    "Webhook attempts and what came of their events: delivered, retrying (an attempt failed, "
    "another is due), dead_lettered (the schedule spent, or the endpoint disabled), dropped "
    "(the endpoint was deleted)",
    ["outcome"],
)
PENDING = Gauge(
    "jobpost_webhook_pending", "Events waiting for an endpoint, on this member's partitions", ["endpoint"]
)
EVENT_LAG = Histogram(
    "jobpost_webhook_event_lag_seconds",
    "From an event's time to its delivery to the endpoint (2xx)",
    ["endpoint"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 4 * 3600, 24 * 3600, 72 * 3600),
)
DISABLED = Counter(
    "jobpost_webhook_endpoints_disabled_total", "Endpoints disabled because they answered 410 Gone"
)
QUEUE_LAG = Histogram(
    "jobpost_webhook_queue_lag_seconds",
    "From an event's time to its deliveries being queued (how far behind the dispatcher reads)",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600),
)
