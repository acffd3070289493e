"""The Grafana dashboard's queries and the series they read, for its tests
(tests/unit/deploy/test_dashboard.py, tests/e2e/test_monitoring.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "jobpost.json"


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query of every panel."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [(p["title"], t["expr"]) for p in panels for t in p.get("targets", [])]


def metric_names(expr: str) -> set[str]:
    """The jobpost_* series a query reads, by their family name (histogram suffixes off)."""
    return {re.sub(r"_(bucket|sum|count)$", "", name) for name in re.findall(r"\bjobpost_[a-z_]+", expr)}
