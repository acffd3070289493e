"""`jobpost doctor`: what make test needs, found, obtained or named before the suite starts.
Commands are stand-ins in a folder of the test's own (a fake apt-get, a fake java)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobpost_dev import doctor
from jobpost_dev.stack import StackSettings


def executable(folder: Path, name: str, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine with nothing on its PATH but the test's folder, and no Playwright browser."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("JOBPOST_CHROMIUM", raising=False)
    monkeypatch.setattr(doctor, "_playwrights_chromium", lambda: None)
    return folder


def test_a_chromium_on_the_path_is_the_one_the_tests_use(bare: Path):
    found = executable(bare, "chromium", "exit 0")
    assert doctor.chromium() == found
    assert doctor._browser(obtain=False, say=print).found == str(found)


def test_a_named_chromium_must_exist(bare: Path, monkeypatch: pytest.MonkeyPatch):
    executable(bare, "chromium", "exit 0")
    monkeypatch.setenv("JOBPOST_CHROMIUM", str(bare / "no-such-browser"))
    finding = doctor._browser(obtain=True, say=print)
    assert finding.found is None and "JOBPOST_CHROMIUM" in finding.remedy


def test_a_missing_chromium_is_installed_with_apt_get_as_root(bare: Path, monkeypatch: pytest.MonkeyPatch):
    installs = bare.parent / "installs"
    # apt-get install puts chromium on the PATH (the first install fails: the package lists are
    # empty on a fresh image, so the doctor updates them and tries again).
    chromium = bare / "chromium"
    script = f"""PATH=/usr/bin:/bin
echo "$@" >> {installs}
case "$1" in
  update) touch {bare}/updated ;;
  install) [ -e {bare}/updated ] || exit 100; printf '#!/bin/sh\\n' > {chromium}; chmod +x {chromium} ;;
esac"""
    executable(bare, "apt-get", script)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    said: list[str] = []

    finding = doctor._browser(obtain=True, say=said.append)

    assert finding.found == str(bare / "chromium")
    assert installs.read_text().splitlines() == [
        "install -y -q chromium",
        "update -q",
        "install -y -q chromium",
    ]
    assert said == ["no chromium found: installing Debian's (apt-get install chromium) ..."]


def test_without_apt_get_playwrights_download_is_tried_and_a_failure_is_named(
    bare: Path, monkeypatch: pytest.MonkeyPatch
):
    tried: list[list[str]] = []
    monkeypatch.setattr(doctor, "_run", lambda command, quiet=False: tried.append(command) or False)

    finding = doctor._browser(obtain=True, say=lambda _line: None)

    assert [command[-3:] for command in tried] == [["playwright", "install", "chromium"]]
    assert finding.found is None
    assert "apt-get install chromium" in finding.remedy and "JOBPOST_CHROMIUM" in finding.remedy


def test_an_old_jdk_is_named_with_what_to_set(tmp_path: Path):
    home = tmp_path / "jdk"
    executable(home / "bin", "java", "echo 'openjdk version \"11.0.2\" 2019-01-15' >&2")
    finding = doctor._java(StackSettings(java_home=home))
    assert (
        finding.found is None and "Java 11" in finding.remedy and "JOBPOST_STACK_JAVA_HOME" in finding.remedy
    )

    executable(home / "bin", "java", "echo 'openjdk version \"17.0.13\" 2024-10-15' >&2")
    assert doctor._java(StackSettings(java_home=home)).found == f"Java 17 ({home / 'bin' / 'java'})"


def test_maven_is_needed_only_while_the_servers_are_not_fetched(bare: Path, tmp_path: Path):
    settings = StackSettings(dir=tmp_path / "stack")
    assert doctor._maven(settings).found is None
    executable(bare, "mvn", "exit 0")
    assert doctor._maven(settings).found == str(bare / "mvn")


def test_the_command_exits_2_naming_what_is_missing(bare: Path, monkeypatch, capsys):
    monkeypatch.setattr(
        doctor,
        "check",
        lambda settings, obtain, say: [
            doctor.Finding("Python >= 3.11", "3.11.7"),
            doctor.Finding("chromium", None, "install it"),
        ],
    )
    assert doctor.main(obtain=False) == 2
    out = capsys.readouterr()
    assert out.out.splitlines() == ["ok       Python >= 3.11: 3.11.7", "MISSING  chromium: install it"]
    assert "1 prerequisite(s) missing" in out.err
