"""What ships is the product alone: `pip wheel .` and the image's default stage carry none of
the development tools (the local servers, the sandbox, chaos, the supervisor, the doctor),
and no module of the product imports them."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# Runs a packaging or documentation tool: in `make test`, not in `make unit`.
pytestmark = pytest.mark.build

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = (
    "jobpost",
    "schemas",
    "runtime",
    "listing",
    "sequencer",
    "producer_api",
    "consumers",
    "search_indexer",
    "webhooks",
)
HARNESS = re.compile(
    r"(^|/)(sandbox|stack|chaos|poms)/|(^|/)(supervisor|doctor|processes|prometheus|run_env)\.py$|jobpost_dev"
)
# What a build needs and the tests do not: local servers, virtualenvs, caches.
NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", ".stack", ".state", "build", "dist", "*.egg-info", "__pycache__", "*_cache", "artifacts"
)


def test_the_wheel_holds_the_product_and_nothing_of_the_harness(tmp_path: Path) -> None:
    # Built from a copy, so the build leaves nothing (build/, *.egg-info) in the working tree.
    source, out = tmp_path / "source", tmp_path / "wheel"
    shutil.copytree(ROOT, source, ignore=NOT_COPIED)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", out, source],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stdout + built.stderr

    (wheel,) = out.glob("jobpost-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert tops == set(PRODUCT)
    assert [name for name in names if HARNESS.search(name)] == []
    assert "jobpost/cli.py" in names and "producer_api/ui/index.html" in names


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "jobpost_dev" in node.value:
            found.add(node.value)  # importlib.import_module("jobpost_dev...") and the like
    return found


def test_no_module_of_the_product_imports_the_development_tools() -> None:
    reaching = {
        str(path.relative_to(ROOT)): sorted(name for name in imports_of(path) if "jobpost_dev" in name)
        for package in PRODUCT
        for path in (ROOT / package).rglob("*.py")
    }
    assert {path: names for path, names in reaching.items() if names} == {}


def stages(dockerfile: str) -> dict[str, list[str]]:
    """Each stage's name and its instructions, in order (the last is what `docker build` makes)."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in dockerfile.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line.upper().startswith("FROM "):
            words = line.split()
            current = found.setdefault(words[-1] if words[-2].upper() == "AS" else str(len(found)), [])
        if line and not line.startswith("#"):
            current.append(line)
    return found


def test_the_images_default_stage_is_the_product_and_the_sandbox_a_target_of_its_own() -> None:
    found = stages((ROOT / "Dockerfile").read_text())
    default = list(found)[-1]

    assert default == "product"
    built_from = [default]
    while (parent := found[built_from[-1]][0].split()[1]) in found:  # FROM <parent> AS <name>
        built_from.append(parent)
    copied = [line for stage in built_from for line in found[stage] if line.upper().startswith("COPY ")]
    assert copied and not [line for line in copied if re.search(r"\bdev\b", line)]
    assert any(re.search(r"\bCOPY dev\b", line) for line in found["sandbox"])
