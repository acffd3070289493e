"""`make sbom` and `make audit` as a maintainer runs them: a bill of materials of exactly the
locked runtime packages, and an audit that passes, fails or says it could not run, each
distinctly. The advisory database is a local imitation of OSV's query API (one advisory, or
none), so the verdicts are the audit's own, whatever this machine can reach."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.unit.test_dependencies import LOCK, ROOT, locked, pinned_version

# Runs a packaging or documentation tool: in `make test`, not in `make unit`.
pytestmark = pytest.mark.build


class Advisories(http.server.ThreadingHTTPServer):
    """OSV's POST /v1/query: `vulnerable` names the one package with an advisory."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Query)
        self.vulnerable: str | None = None
        self.asked: set[str] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1/query"


class _Query(http.server.BaseHTTPRequestHandler):
    server: Advisories

    def do_POST(self) -> None:
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name = canonicalize_name(query["package"]["name"])
        self.server.asked.add(name)
        found = {}
        if name == self.server.vulnerable:
            affected = [{"package": {"name": name, "ecosystem": "PyPI"}, "versions": [query["version"]]}]
            found = {
                "vulns": [
                    {
                        "id": "GHSA-jobp-test-0001",
                        "summary": "a test advisory",
                        "details": "",
                        "affected": affected,
                        "aliases": [],
                        "modified": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        body = json.dumps(found).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def advisories() -> Iterator[Advisories]:
    server = Advisories()
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def make(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_sbom_lists_every_locked_runtime_package_with_its_version_and_hashes(tmp_path: Path) -> None:
    target = tmp_path / "sbom.cdx.json"
    made = make("sbom", f"SBOM={target}")
    assert made.returncode == 0, made.stderr
    bom = json.loads(target.read_text())

    assert (bom["bomFormat"], bom["specVersion"]) == ("CycloneDX", "1.6")
    assert bom["metadata"]["component"]["name"] == "jobpost"
    components = {canonicalize_name(c["name"]): c for c in bom["components"]}
    lock = locked(LOCK)
    assert set(components) == set(lock)
    for name, (requirement, hashes) in lock.items():
        component = components[name]
        assert component["version"] == str(pinned_version(requirement))
        assert component["purl"] == f"pkg:pypi/{component['name']}@{component['version']}"
        listed = {h["content"] for ref in component["externalReferences"] for h in ref.get("hashes", [])}
        assert listed == {h.removeprefix("sha256:") for h in hashes}


def test_the_audit_passes_when_the_advisories_name_no_locked_package(advisories: Advisories) -> None:
    audited = make("audit", "AUDIT_SERVICE=osv", f"AUDIT_OSV_URL={advisories.url}")
    assert audited.returncode == 0, audited.stderr
    assert "No known vulnerabilities found" in audited.stdout + audited.stderr
    assert {"pyjwt", "confluent-kafka", "fastapi"} <= advisories.asked


def test_the_audit_fails_naming_an_advisory_of_a_locked_package(advisories: Advisories) -> None:
    advisories.vulnerable = "pyjwt"
    audited = make("audit", "AUDIT_SERVICE=osv", f"AUDIT_OSV_URL={advisories.url}")
    assert audited.returncode != 0
    assert "GHSA-jobp-test-0001" in audited.stdout and "pyjwt" in audited.stdout
    assert "make audit: FAILED" in audited.stderr


def test_an_advisory_database_that_does_not_answer_is_said_and_nothing_reported_clean() -> None:
    audited = make("audit", "AUDIT_SERVICE=osv", "AUDIT_OSV_URL=http://127.0.0.1:9/v1/query")
    assert audited.returncode == 2
    assert "make audit: NOT RUN - the advisory database (osv) did not answer" in audited.stderr
    assert "Connection refused" in audited.stderr
    assert "No known vulnerabilities" not in audited.stdout + audited.stderr
