"""The development commands of `jobpost`: `stack status --json`, fetch progress, a server
that cannot be started said in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobpost import cli
from jobpost_dev import stack
from jobpost_dev.stack import kafka as kafka_module


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


def test_a_server_that_cannot_start_is_one_line_and_exit_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_STACK_DIR", str(tmp_path))

    def refuse(_self: stack.KafkaServer, progress: object = None) -> bool:
        raise stack.StackError("kafka: something else already listens on its port")

    monkeypatch.setattr(stack.KafkaServer, "start", refuse)

    assert cli.main(["stack", "start", "--only", "kafka"]) == 1

    assert capsys.readouterr().err == "error: kafka: something else already listens on its port\n"
