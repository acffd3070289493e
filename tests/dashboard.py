"""The Grafana dashboard's queries and the series they read, for its tests
(tests/unit/deploy/test_dashboard.py, tests/e2e/test_monitoring.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "jobpost.json"
# Metrics the delivery branch adds (issues 21 and 22) at the same time as this dashboard:
# until that lands they are not exposed, so their panels are checked for a valid query only.
PENDING = {
    "jobpost_destination_circuit_state",
    "jobpost_destination_circuit_opened_total",
    "jobpost_destination_rate_per_minute",
    "jobpost_destination_throttled_total",
    "jobpost_delivery_batch_records",
    "jobpost_delivery_tasks_in_progress",
    "jobpost_dead_letter_oldest_unresolved_age_seconds",
    "jobpost_consumer_oldest_unconsumed_age_seconds",
}


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query of every panel."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(p["title"], t["expr"]) for p in panels for t in p.get("targets", [])]


def metric_names(expr: str) -> set[str]:
    """The jobpost_* series a query reads, by their family name (histogram suffixes off)."""
    return {re.sub(r"_(bucket|sum|count)$", "", name) for name in re.findall(r"\bjobpost_[a-z_]+", expr)}
