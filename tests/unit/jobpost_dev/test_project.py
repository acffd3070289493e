"""The project's folder is the working directory or JOBPOST_PROJECT_ROOT, never where the
development package is installed: `.stack`, `.state`, the processes' logs and the rules live
under it. The POMs that fetch the servers are the package's own data."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobpost_dev import prometheus, stack
from jobpost_dev.processes import log_dir
from jobpost_dev.run import RunSettings
from jobpost_dev.stack.settings import POMS


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("JOBPOST_PROJECT_ROOT", "JOBPOST_STACK_DIR", "JOBPOST_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)


def found() -> dict[str, Path]:
    return {
        "stack": stack.StackSettings().dir,
        "state": RunSettings().state_dir,
        "logs": log_dir(),
        "rules": prometheus.rules(),
    }


def expected(root: Path) -> dict[str, Path]:
    return {
        "stack": root / ".stack",
        "state": root / ".state",
        "logs": root / ".stack" / "logs" / "processes",
        "rules": root / "deploy" / "prometheus" / "rules.yml",
    }


def test_the_working_directory_is_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    assert found() == expected(tmp_path.resolve())


def test_jobpost_project_root_names_it_wherever_the_command_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "checkout"
    monkeypatch.setenv("JOBPOST_PROJECT_ROOT", str(project))

    assert found() == expected(project)


def test_a_relative_root_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JOBPOST_PROJECT_ROOT", "checkout")

    assert stack.StackSettings().dir == tmp_path.resolve() / "checkout" / ".stack"


def test_the_stack_folder_setting_still_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_STACK_DIR", str(tmp_path / "elsewhere"))

    assert stack.StackSettings().dir == tmp_path / "elsewhere"


def test_prometheus_without_the_projects_rules_runs_not_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(prometheus.shutil, "which", lambda _name: "/usr/bin/prometheus")
    monkeypatch.setattr(prometheus, "_taken", lambda _port: False)

    binary, why = prometheus.available("auto", 9090)

    assert binary is None
    assert why == (
        f"without its rules: no {tmp_path.resolve() / 'deploy/prometheus/rules.yml'}"
        " (run from the project's folder or set JOBPOST_PROJECT_ROOT)"
    )


def test_the_poms_are_the_packages_own_data() -> None:
    found = sorted(str(path.relative_to(POMS)) for path in POMS.rglob("*") if path.is_file())

    assert found == [
        "elasticsearch/pom.xml",
        "kafka/log4j2.properties",
        "kafka/pom.xml",
        "registry/pom.xml",
    ]
