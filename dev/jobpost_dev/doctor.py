"""`jobpost doctor`: what `make test` needs on this machine, checked before the suite starts.

`make test` runs it with `--obtain` first, the way `make run` fetches the servers: what can
be obtained is obtained (the browser of the playground's tests), and what cannot is named,
one line each, with what to do, before any test runs (exit status 2) — not after the
suite has run for a quarter of an hour.

The browser: `JOBPOST_CHROMIUM` when set (it must exist then); else a chromium on the
PATH (Debian's `chromium`); else Playwright's own chromium once downloaded. To obtain one:
Debian's package where `apt-get` exists and we may use it (root, or `sudo -n`), else
Playwright's download (`playwright install chromium`) where it is reachable.

Prometheus (`promtool` tests the alert rules, `prometheus` runs under the monitoring
end-to-end test): on the PATH, else Debian's `prometheus` package without its recommends
(exporters we do not use), the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobpost_dev import stack
from jobpost_dev.stack.settings import StackError, java_home

MIN_PYTHON = (3, 11)
MIN_JAVA = 17
_INSTALL_TIMEOUT_S = 900
Say = Callable[[str], None]


class BrowserSettings(BaseSettings):
    """`JOBPOST_CHROMIUM`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_", env_ignore_empty=True)

    chromium: Path | None = Field(default=None, description="the browser of the playground's tests")


@dataclass(frozen=True)
class Finding:
    """One prerequisite: where it was found, or (`found` None) what to do about it."""

    prerequisite: str
    found: str | None
    remedy: str = ""

    def line(self) -> str:
        if self.found is not None:
            return f"ok       {self.prerequisite}: {self.found}"
        return f"MISSING  {self.prerequisite}: {self.remedy}"


def chromium() -> Path | None:
    """The chromium the browser tests drive (see the module's docstring), or None."""
    named = BrowserSettings().chromium
    if named:
        return named if named.is_file() else None
    for command in ("chromium", "chromium-browser"):
        found = shutil.which(command)
        if found:
            return Path(found)
    return _playwrights_chromium()


def check(settings: stack.StackSettings, obtain: bool, say: Say = print) -> list[Finding]:
    return [_python(), _java(settings), _maven(settings), _browser(obtain, say), _prometheus(obtain, say)]


def main(obtain: bool) -> int:
    findings = check(stack.StackSettings(), obtain, say=lambda line: print(f"doctor: {line}", flush=True))
    for finding in findings:
        print(finding.line())
    missing = [f for f in findings if f.found is None]
    if missing:
        print(f"doctor: {len(missing)} prerequisite(s) missing; see README, Quick start", file=sys.stderr)
        return 2
    return 0


def _python() -> Finding:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] >= MIN_PYTHON:
        return Finding("Python >= 3.11", f"{version} ({sys.executable})")
    return Finding("Python >= 3.11", None, f"this is {version}: make PYTHON=<a python3.11 or newer>")


def _java(settings: stack.StackSettings) -> Finding:
    wanted = f"a JDK >= {MIN_JAVA} (the local Kafka and Elasticsearch)"
    try:
        java = java_home(settings) / "bin" / "java"
        answer = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    except (StackError, OSError, subprocess.TimeoutExpired) as exc:
        return Finding(wanted, None, f"{exc}; install one (Debian: apt-get install openjdk-17-jdk-headless)")
    match = re.search(r'version "(\d+)', answer.stderr + answer.stdout)
    major = int(match.group(1)) if match else 0
    if major < MIN_JAVA:
        return Finding(
            wanted, None, f"{java} is Java {major or '?'}: set JOBPOST_STACK_JAVA_HOME or JAVA_HOME"
        )
    return Finding(wanted, f"Java {major} ({java})")


def _maven(settings: stack.StackSettings) -> Finding:
    wanted = "Maven (fetches the servers from Maven Central once)"
    mvn = shutil.which("mvn")
    if mvn is not None:
        return Finding(wanted, mvn)
    if all(server.fetched_into().exists() for server in stack.servers(settings)):
        return Finding(wanted, f"not needed: the servers are in {settings.dir}")
    return Finding(wanted, None, "install it (Debian: apt-get install maven) and put mvn on the PATH")


def _browser(obtain: bool, say: Say) -> Finding:
    wanted = "chromium (the playground's browser tests)"
    named = BrowserSettings().chromium
    if named and not named.is_file():
        return Finding(wanted, None, f"JOBPOST_CHROMIUM={named} is not a file")
    found = chromium()
    if found is None and obtain:
        _obtain_chromium(say)
        found = chromium()
    if found is not None:
        return Finding(wanted, str(found))
    return Finding(
        wanted,
        None,
        "install Debian's chromium (apt-get install chromium), or run `playwright install chromium` "
        "where its download is reachable, or set JOBPOST_CHROMIUM=<path to a chromium>",
    )


def _prometheus(obtain: bool, say: Say) -> Finding:
    wanted = "prometheus and promtool (the alert rules' tests, the monitoring test)"
    if obtain and not (shutil.which("prometheus") and shutil.which("promtool")):
        _apt_install("prometheus", say, "--no-install-recommends")
    found = shutil.which("prometheus"), shutil.which("promtool")
    if all(found):
        return Finding(wanted, " and ".join(str(f) for f in found))
    remedy = "install Debian's prometheus (apt-get install --no-install-recommends prometheus)"
    return Finding(wanted, None, remedy)


def _apt_install(package: str, say: Say, *options: str) -> bool:
    """Debian's `package`, where apt-get may be used here; whether it was installed."""
    apt = _apt_get()
    if apt is None:
        return False
    say(f"no {package} found: installing Debian's (apt-get install {package}) ...")
    install = [*apt, "install", "-y", "-q", *options, package]
    if _run(install) or (_run([*apt, "update", "-q"]) and _run(install)):
        return True
    say(f"apt-get could not install {package}")
    return False


def _obtain_chromium(say: Say) -> None:
    if _apt_install("chromium", say):
        return
    say("trying Playwright's own chromium (playwright install chromium) ...")
    if not _run([sys.executable, "-m", "playwright", "install", "chromium"]):
        say("Playwright's download did not succeed")


def _apt_get() -> list[str] | None:
    """How to run apt-get here: as root, or through a sudo that asks no password."""
    apt = shutil.which("apt-get")
    if apt is None:
        return None
    if os.geteuid() == 0:
        return [apt]
    sudo = shutil.which("sudo")
    if sudo is not None and _run([sudo, "-n", "true"], quiet=True):
        return [sudo, "-n", apt]
    return None


def _run(command: list[str], quiet: bool = False) -> bool:
    try:
        output = subprocess.DEVNULL if quiet else None
        done = subprocess.run(command, stdout=output, stderr=output, timeout=_INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _playwrights_chromium() -> Path | None:
    """Playwright's own chromium, if it was downloaded (`playwright install chromium`)."""
    try:
        from playwright.sync_api import sync_playwright  # a dev dependency: absent in a deployment
    except ImportError:
        return None
    try:
        with sync_playwright() as playwright:
            path = Path(playwright.chromium.executable_path)
    except Exception:  # noqa: BLE001 - a driver that cannot start has no browser to offer
        return None
    return path if path.is_file() else None
