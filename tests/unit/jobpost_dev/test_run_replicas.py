"""JOBPOST_RUN_REPLICAS=2: `jobpost run`'s components, their names, ports and environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobpost_dev.run import RunSettings, components


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "API_PORT",
        "SANDBOX_PORT",
        "METRICS_PORT_BASE",
        "RUN_REPLICAS",
        "STATE_DIR",
        "PROJECT_ROOT",
    ):
        monkeypatch.delenv(f"JOBPOST_{name}", raising=False)


def member(name: str) -> dict[str, str]:
    """A replica's sequencer member keeps its name across restarts (static membership)."""
    return {"JOBPOST_SEQUENCER_INSTANCE_ID": name}


def test_two_replicas_of_everything_but_the_sandbox() -> None:
    settings = RunSettings(replicas=2, api_port=8000, sandbox_port=8090, metrics_port_base=9101)

    listed = [(c.name, c.argv[3:], c.address, c.env) for c in components(settings)]
    for name, _, _, env in listed[1:]:  # every component but the sandbox has a state folder
        assert env.pop("JOBPOST_STATE_DIR") == str(Path.cwd().resolve() / ".state" / name)

    metrics = "JOBPOST_CONSUMER_METRICS_PORT"
    assert listed == [
        ("sandbox", ["sandbox", "--port", "8090"], "http://127.0.0.1:8090", {}),
        (
            "api-1",
            ["api"],
            "http://127.0.0.1:8000 (docs at /docs)",
            {"JOBPOST_API_PORT": "8000", **member("api-1")},
        ),
        (
            "api-2",
            ["api"],
            "http://127.0.0.1:8001 (docs at /docs)",
            {"JOBPOST_API_PORT": "8001", **member("api-2")},
        ),
        ("linkedin-1", ["consumer", "linkedin"], "metrics http://127.0.0.1:9101/metrics", {metrics: "9101"}),
        ("linkedin-2", ["consumer", "linkedin"], "metrics http://127.0.0.1:9104/metrics", {metrics: "9104"}),
        ("indeed-1", ["consumer", "indeed"], "metrics http://127.0.0.1:9102/metrics", {metrics: "9102"}),
        ("indeed-2", ["consumer", "indeed"], "metrics http://127.0.0.1:9105/metrics", {metrics: "9105"}),
        (
            "indexer-1",
            ["indexer"],
            "metrics http://127.0.0.1:9103/metrics",
            {"JOBPOST_INDEXER_METRICS_PORT": "9103"},
        ),
        (
            "indexer-2",
            ["indexer"],
            "metrics http://127.0.0.1:9106/metrics",
            {"JOBPOST_INDEXER_METRICS_PORT": "9106"},
        ),
    ]


def test_one_replica_keeps_todays_names_and_ports() -> None:
    listed = {c.name: c for c in components(RunSettings(state_dir=Path("/var/lib/jobpost")))}

    assert list(listed) == ["sandbox", "api", "linkedin", "indeed", "indexer"]
    assert listed["api"].env == {
        "JOBPOST_API_PORT": "8000",
        **member("api"),
        "JOBPOST_STATE_DIR": "/var/lib/jobpost/api",
    }
    assert listed["indexer"].env["JOBPOST_INDEXER_METRICS_PORT"] == "9103"


def test_no_two_components_share_a_port() -> None:
    for replicas in (1, 2, 3):
        ports = [
            port
            for c in components(RunSettings(replicas=replicas))
            for port in [*c.env.values(), *c.argv[-1:]]
            if port.isdigit()
        ]
        assert len(ports) == len(set(ports)) == 1 + 4 * replicas


def test_no_two_components_share_a_state_folder() -> None:
    """Two processes cannot open one RocksDB; a restarted process finds its own again."""
    for replicas in (1, 3):
        folders = [c.env["JOBPOST_STATE_DIR"] for c in components(RunSettings(replicas=replicas))[1:]]
        assert len(folders) == len(set(folders)) == 4 * replicas
        assert folders == [c.env["JOBPOST_STATE_DIR"] for c in components(RunSettings(replicas=replicas))[1:]]
