"""The locked dependencies: every package pinned with its hashes, in step with pyproject.toml's
ranges, above the published advisories, and what this environment actually runs."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK, DEV_LOCK = ROOT / "requirements.txt", ROOT / "requirements-dev.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# Fixed in: starlette 0.49.1 CVE-2025-62727 (and 1.0.1-1.5.1 later ones), aiohttp 3.14.3
# GHSA-cq5v-8q36-5273 (3.14.2 the WebSocket ones), pyjwt 2.12.0 CVE-2026-32597 and 2.13.0
# GHSA-fhv5-28vv-h8m8 / GHSA-993g-76c3-p5m4 (2.14: the JWKS cooldown), confluent-kafka 2.16.0
# (its bundled OpenSSL).
ADVISORY_FLOORS = {
    "starlette": Version("1.5.1"),
    "aiohttp": Version("3.14.3"),
    "pyjwt": Version("2.14.0"),
    "confluent-kafka": Version("2.16.0"),
}


def locked(path: Path) -> dict[str, tuple[Requirement, list[str]]]:
    """name -> (the pinned requirement, its hashes), from a `uv pip compile --generate-hashes` file."""
    entries: dict[str, tuple[Requirement, list[str]]] = {}
    logical = path.read_text().replace("\\\n", " ")
    for line in logical.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement_text, *options = line.split(" --hash=")
        requirement = Requirement(requirement_text.strip())
        entries[canonicalize_name(requirement.name)] = (requirement, [h.strip() for h in options])
    return entries


def pinned_version(requirement: Requirement) -> Version:
    (specifier,) = requirement.specifier
    assert specifier.operator == "==", requirement
    return Version(specifier.version)


@pytest.mark.parametrize("path", [LOCK, DEV_LOCK], ids=lambda p: p.name)
def test_every_package_is_pinned_with_its_hashes(path: Path) -> None:
    entries = locked(path)

    assert len(entries) > 30
    for name, (requirement, hashes) in entries.items():
        pinned_version(requirement)
        assert hashes and all(h.startswith("sha256:") and len(h) == 71 for h in hashes), name


@pytest.mark.parametrize(
    ("path", "wanted"),
    [
        (LOCK, PROJECT["dependencies"]),
        (DEV_LOCK, PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"]),
    ],
    ids=["runtime", "dev"],
)
def test_the_lock_follows_pyproject(path: Path, wanted: list[str]) -> None:
    """A range changed in pyproject.toml without `make lock` fails here."""
    entries = locked(path)
    for text in wanted:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in entries, f"{name} is not in {path.name}: run `make lock`"
        version = pinned_version(entries[name][0])
        assert requirement.specifier.contains(version), f"{name} {version} outside {requirement.specifier}"


def test_the_image_and_the_tests_run_the_same_versions() -> None:
    runtime, dev = locked(LOCK), locked(DEV_LOCK)

    assert {n: str(r.specifier) for n, (r, _) in runtime.items()} == {
        n: str(dev[n][0].specifier) for n in runtime
    }


def test_the_floors_are_above_the_advisories() -> None:
    ranges = {
        canonicalize_name(Requirement(t).name): Requirement(t).specifier for t in PROJECT["dependencies"]
    }
    entries = locked(LOCK)
    for name, fixed in ADVISORY_FLOORS.items():
        below = (
            Version(f"{fixed.major}.{fixed.minor - 1}")
            if fixed.micro == 0
            else Version(f"{fixed.major}.{fixed.minor}.{fixed.micro - 1}")
        )
        assert not ranges[name].contains(below), name
        assert ranges[name].contains(fixed)
        assert pinned_version(entries[name][0]) >= fixed


def test_this_environment_runs_the_locked_versions() -> None:
    for name, (requirement, _hashes) in locked(DEV_LOCK).items():
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # another platform's (pywin32, colorama)
        assert Version(importlib.metadata.version(name)) == pinned_version(requirement), name


@pytest.mark.parametrize("path", [LOCK, DEV_LOCK], ids=lambda p: p.name)
def test_the_installer_is_locked_too(path: Path) -> None:
    """pip (which installs the lock) and setuptools (which builds the project) are pinned
    with their hashes like every other package, so an install a month later runs the same."""
    entries = locked(path)

    assert {"pip", "setuptools"} <= entries.keys()
