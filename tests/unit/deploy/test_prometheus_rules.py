"""The alert and recording rules (deploy/prometheus/): valid for Prometheus, each alert fired
by a synthetic series and left quiet by healthy ones (`promtool test rules`), and each one
explained in the docs (docs/operations/monitoring.md, "Alerts"), where its runbook points."""

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "deploy" / "prometheus" / "rules.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "rules_test.yml"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail(
            "promtool not found: install Debian's prometheus (apt-get install prometheus; .ci/run does)"
        )
    return subprocess.run([found, *args], capture_output=True, text=True, cwd=RULES.parent, timeout=60)


def alerts() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def test_prometheus_accepts_the_rules():
    checked = promtool("check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout


def test_each_alert_fires_on_its_synthetic_series_and_no_other():
    tested = promtool("test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_case_that_fires_it():
    cases = [
        case for test in yaml.safe_load(RULE_TESTS.read_text())["tests"] for case in test["alert_rule_test"]
    ]
    fired = {case["alertname"] for case in cases if case["exp_alerts"]}
    assert {rule["alert"] for rule in alerts()} <= fired


def test_every_alert_says_what_happened_how_bad_and_where_the_runbook_is():
    for rule in alerts():
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
        assert {"summary", "description", "runbook"} <= set(rule["annotations"]), rule["alert"]
        assert rule["alert"] in rule["annotations"]["runbook"]
        page = rule["annotations"]["runbook"].split(",")[0]
        assert (ROOT / page).is_file(), f"{rule['alert']}: its runbook names {page}, which is not there"


def test_the_docs_have_a_runbook_line_for_every_alert():
    page = (ROOT / "docs" / "operations" / "monitoring.md").read_text()
    section = page[page.index("## Alerts") :]
    for rule in alerts():
        assert re.search(rf"^\| `{rule['alert']}` \|", section, re.MULTILINE), rule["alert"]
