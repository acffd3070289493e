"""The documentation site builds with `mkdocs build --strict` (a broken link, a missing anchor
or a page left out of the nav fails it), and the README stays short, with links that lead
somewhere in the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# Runs a packaging or documentation tool: in `make test`, not in `make unit`.
pytestmark = pytest.mark.build

ROOT = Path(__file__).resolve().parents[2]
README_MOST_LINES = 220


def test_the_site_builds_strict(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    built = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    warnings = [line for line in built.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert built.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(warnings or [built.stderr])
    assert (tmp_path / "site" / "index.html").is_file()


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MOST_LINES, f"README.md has {len(lines)} lines; the rest belongs in docs/"


def test_every_link_of_the_readme_leads_to_a_file_of_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [link.split("#", 1)[0] for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "the README links to no page of the docs"
    missing = [link for link in local if link and not (ROOT / link).exists()]
    assert not missing, f"README.md links to what is not in the repository: {missing}"
