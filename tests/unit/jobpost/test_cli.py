"""The `jobpost` command line: --version, `python -m jobpost`, the operator's commands, and
the commands installed packages add (entry-point group `jobpost.commands`)."""

from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from jobpost import cli

PROJECT_ROOT = Path(__file__).resolve().parents[3]
OPERATORS = {
    "api",
    "sequencer",
    "consumer",
    "indexer",
    "reindex",
    "webhooks",
    "topics",
    "acls",
    "dlq",
    "config",
}
DEVELOPMENT = {"run", "stack", "doctor", "chaos", "sandbox"}


def commands(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


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


def test_without_the_development_tools_only_the_operators_commands_remain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: importlib.metadata.EntryPoints([]))

    assert commands(cli.build_parser()) == OPERATORS


def test_the_development_tools_add_their_commands_where_installed() -> None:
    assert commands(cli.build_parser()) == OPERATORS | DEVELOPMENT


def test_a_command_that_cannot_be_loaded_is_named_and_the_rest_still_work(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = importlib.metadata.EntryPoint("gone", "jobpost_gone.cli:add", cli.COMMANDS)
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda **_: importlib.metadata.EntryPoints([gone])
    )

    assert commands(cli.build_parser()) == OPERATORS
    assert "command gone (jobpost_gone.cli:add) not loaded" in capsys.readouterr().err
