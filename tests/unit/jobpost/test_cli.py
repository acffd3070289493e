"""The `jobpost` command line: --version, `python -m jobpost`, `stack status --json`, fetch progress."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobpost import cli, stack
from jobpost.stack import kafka as kafka_module

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])

    assert exited.value.code == 0
    name, version = capsys.readouterr().out.split()
    assert name == "jobpost" and version


def test_python_dash_m_jobpost_is_the_same_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "jobpost", "--version"],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        timeout=30,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("jobpost ")


def test_status_json_is_one_object_per_server_per_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_STACK_DIR", str(tmp_path))
    monkeypatch.setenv("JOBPOST_STACK_KAFKA_PORT", "19092")
    monkeypatch.setenv("JOBPOST_STACK_ELASTICSEARCH_PORT", "19200")

    assert cli.main(["stack", "status", "--json"]) == 0

    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [
        {"name": "kafka", "pid": None, "addresses": ["127.0.0.1:19092"], "running": False},
        {"name": "elasticsearch", "pid": None, "addresses": ["http://127.0.0.1:19200"], "running": False},
    ]


def test_plain_status_stays_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_STACK_DIR", str(tmp_path))

    assert cli.main(["stack", "status"]) == 0

    assert capsys.readouterr().out.splitlines() == ["kafka: stopped", "elasticsearch: stopped"]


def test_fetch_says_what_it_downloads_and_what_landed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_mvn(_pom: Path, *goals: str) -> None:
        output = Path(next(g for g in goals if g.startswith("-DoutputDirectory=")).split("=", 1)[1])
        output.mkdir(parents=True)
        (output / "kafka_2.13-4.1.0.jar").write_bytes(b"\0" * 3 * 2**20)

    monkeypatch.setattr(kafka_module, "mvn", fake_mvn)
    said: list[str] = []

    stack.KafkaServer(stack.StackSettings(dir=tmp_path)).fetch(progress=said.append)

    assert said == [
        "kafka: fetching org.apache.kafka:kafka_2.13 4.1.0 and its dependencies"
        " from Maven Central (~54 MB) ...",
        f"kafka: 1 jars, 3 MB in {tmp_path / 'jars' / 'kafka'}",
    ]
