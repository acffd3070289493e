"""The Grafana dashboard (deploy/grafana/jobpost.json) as a file: well formed, importable
with any Prometheus data source, and reading only series that exist — defined in the code or
recorded by the rules. tests/e2e/test_monitoring.py runs every query against a real
Prometheus scraping the real system."""

import json
import re
from pathlib import Path

import yaml

from tests.dashboard import DASHBOARD, dashboard_queries, metric_names

ROOT = Path(__file__).resolve().parents[3]
CODE = ("runtime", "sequencer", "producer_api", "consumers", "search_indexer", "schemas", "jobpost")


def defined_in_code() -> set[str]:
    names: set[str] = set()
    for folder in CODE:
        for path in (ROOT / folder).rglob("*.py"):
            names |= set(re.findall(r'"(jobpost_[a-z_]+)"', path.read_text()))
    return names


def recorded() -> set[str]:
    groups = yaml.safe_load((ROOT / "deploy" / "prometheus" / "rules.yml").read_text())["groups"]
    return {rule["record"] for group in groups for rule in group["rules"] if "record" in rule}


def test_panels_are_well_formed_and_use_the_imported_data_source():
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["__inputs"][0]["name"] == "DS_PROMETHEUS"
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}", panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and all(t["expr"] for t in panel["targets"]), panel["title"]


def test_every_series_read_is_defined_in_the_code_or_recorded_by_a_rule():
    code, rules = defined_in_code(), recorded()
    for title, expr in dashboard_queries():
        unknown = metric_names(expr) - code
        assert unknown == set(), f"{title}: {unknown}"
        assert set(re.findall(r"\bjobpost:[a-z0-9_:]+", expr)) <= rules, title


def test_the_issues_panels_are_there():
    titles = " | ".join(title for title, _ in dashboard_queries()).lower()
    for wanted in (
        "writes",
        "transaction",
        "stage",
        "deliveries",
        "retries",
        "dead letter",
        "lag",
        "restore",
    ):
        assert wanted in titles, wanted
