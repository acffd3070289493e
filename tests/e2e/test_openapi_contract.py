"""The OpenAPI description is the contract: schemathesis, with every check (its default)
and every phase (examples, coverage, fuzzing, stateful), finds nothing against the API as
`make run` starts it. The documented exceptions are in tests/e2e/schemathesis.toml."""

import subprocess
import sys
from pathlib import Path

from tests.e2e.conftest import System

CONFIG = Path(__file__).with_name("schemathesis.toml")


def test_schemathesis_finds_nothing(system: System, tmp_path: Path):
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file", str(CONFIG),
        "run", f"{system.url}/openapi.json",
        # Every check runs by default; `--checks all` on the command line would override
        # the per-operation exceptions of the config file (CLI options take precedence).
        "--phases", "examples,coverage,fuzzing,stateful",
        "--header", f"Authorization: Bearer {system.token}",
        "--max-examples", "40",
        "--request-timeout", "20",
        "--seed", "20261130",
        "--no-color",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert "passed" in result.stdout
