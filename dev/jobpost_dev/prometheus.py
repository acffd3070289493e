"""Prometheus for `make run`: a scrape config listing every component's /metrics (every
replica), the project's rules loaded, one more supervised child on 127.0.0.1:9090.

`JOBPOST_RUN_PROMETHEUS`: `auto` (the default) runs it when a `prometheus` binary is on the
PATH and its port is free, `true` insists (and refuses to start without), `false` never.
The config is JSON, which Prometheus reads as YAML, so nothing beyond the standard library
writes it.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from jobpost_dev.project import project_root
from jobpost_dev.stack.settings import StackError

SCRAPE_INTERVAL = "5s"  # local: a dashboard fills within seconds of a write


class Scraped(Protocol):
    name: str
    metrics: str  # host:port of its /metrics, "" when it has none


class PrometheusUnavailable(StackError):
    """JOBPOST_RUN_PROMETHEUS=true, but Prometheus cannot run."""


def job_of(component: str) -> str:
    """`jobpost-<kind>`: the replicas of one kind (api-1, api-2 ...) share a job."""
    kind = re.sub(r"-\d+$", "", component)
    return f"jobpost-{kind}"


def rules() -> Path:
    """The project's alert and recording rules, which the Prometheus of `make run` loads."""
    return project_root() / "deploy" / "prometheus" / "rules.yml"


def scrape_config(components: Sequence[Scraped], rule_file: Path | None = None) -> dict[str, Any]:
    jobs: dict[str, list[dict[str, Any]]] = {}
    for component in components:
        if component.metrics:
            target = {"targets": [component.metrics], "labels": {"component": component.name}}
            jobs.setdefault(job_of(component.name), []).append(target)
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": SCRAPE_INTERVAL},
        "rule_files": [str(rule_file or rules())],
        "scrape_configs": [{"job_name": job, "static_configs": targets} for job, targets in jobs.items()],
    }


def command(binary: str, folder: Path, port: int) -> list[str]:
    return [
        binary,
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        "--storage.tsdb.retention.time=2d",
        f"--web.listen-address=127.0.0.1:{port}",
    ]


def launch(binary: str, folder: Path, port: int, scraped: Sequence[Scraped]) -> tuple[list[str], str]:
    """(argv, address) of a Prometheus scraping `scraped`, its config written."""
    write_config(folder, scraped)
    return command(binary, folder, port), f"http://127.0.0.1:{port} (targets, rules, alerts)"


def write_config(folder: Path, components: Sequence[Scraped]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prometheus.yml"
    path.write_text(json.dumps(scrape_config(components), indent=2) + "\n")
    return path


def available(mode: str, port: int) -> tuple[str | None, str]:
    """(the binary to run or None, why not): whether `make run` runs Prometheus."""
    if mode == "false":
        return None, "off (JOBPOST_RUN_PROMETHEUS=false)"
    binary = shutil.which("prometheus")
    why = ""
    if binary is None:
        why = "not installed (Debian: apt-get install prometheus)"
    elif _taken(port):
        why = f"127.0.0.1:{port} is taken (JOBPOST_RUN_PROMETHEUS_PORT moves it)"
    elif not rules().is_file():
        why = f"without its rules: no {rules()} (run from the project's folder or set JOBPOST_PROJECT_ROOT)"
    if why and mode == "true":
        raise PrometheusUnavailable(f"JOBPOST_RUN_PROMETHEUS=true, but Prometheus is {why}")
    return (None, why) if why else (binary, "")


def _taken(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False
