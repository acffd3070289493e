"""`make run` checks every port it needs before it starts anything, and refuses (exit 2)
naming the port, the setting that moves it and what holds it. The stack's own servers,
already running, are no conflict."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobpost import cli
from jobpost_dev import run, stack
from jobpost_dev.ports import Port, refusals
from jobpost_dev.processes import free_ports
from jobpost_dev.run import RunSettings, ports_needed
from jobpost_dev.supervisor import Supervisor


@pytest.fixture
def held() -> Iterator[int]:
    """A port this test process listens on."""
    with socket.create_server(("127.0.0.1", 0)) as listening:
        yield listening.getsockname()[1]


@pytest.fixture
def quiet_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """make run's components on ports free now, whatever else this machine runs."""
    for name in ("JOBPOST_RUN_REPLICAS", "JOBPOST_STACK_BROKERS", "JOBPOST_STACK_REGISTRY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JOBPOST_API_PORT", str(free_ports(1)))
    monkeypatch.setenv("JOBPOST_SANDBOX_PORT", str(free_ports(1)))
    # one replica: the linkedin, indeed and indexer consumers' and the webhooks dispatcher's
    monkeypatch.setenv("JOBPOST_METRICS_PORT_BASE", str(free_ports(4)))
    monkeypatch.setenv("JOBPOST_STACK_DIR", str(tmp_path))
    monkeypatch.setenv("JOBPOST_RUN_PROMETHEUS", "false")


def test_a_taken_api_port_refuses_the_run_before_anything_starts(
    quiet_machine: None, held: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOBPOST_API_PORT", str(held))
    monkeypatch.setenv("JOBPOST_RUN_SERVERS", "false")
    started: list[str] = []
    monkeypatch.setattr(run, "ensure_topics", lambda _settings: started.append("topics"))
    monkeypatch.setattr(Supervisor, "start", lambda _self, component: started.append(component.name))

    assert cli.main(["run"]) == 2

    assert started == []
    first, last = capsys.readouterr().err.splitlines()
    assert first.startswith(f"error: port {held} (api) is taken, held by pid {os.getpid()} (")
    assert first.endswith("; JOBPOST_API_PORT moves it")
    assert last.startswith("error: make run started nothing")


def test_every_port_of_the_run_is_checked(quiet_machine: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_RUN_REPLICAS", "2")
    settings = RunSettings(prometheus="true", prometheus_port=19090)
    servers = stack.servers(stack.StackSettings(kafka_port=19092, elasticsearch_port=19200))
    api, sandbox, metrics = settings.api_port, settings.sandbox_port, settings.metrics_port_base

    needed = {(p.number, p.what, p.setting) for p in ports_needed(settings, servers)}

    assert needed == {
        (19092, "kafka", "JOBPOST_STACK_KAFKA_PORT"),
        (9093, "kafka's controller", "JOBPOST_STACK_KAFKA_CONTROLLER_PORT"),
        (19200, "elasticsearch", "JOBPOST_STACK_ELASTICSEARCH_PORT"),
        (19300, "elasticsearch's transport (its port + 100)", "JOBPOST_STACK_ELASTICSEARCH_PORT"),
        (sandbox, "sandbox", "JOBPOST_SANDBOX_PORT"),
        (api, "api-1", "JOBPOST_API_PORT"),
        (api + 1, "api-2", "JOBPOST_API_PORT"),
        *(
            (metrics + offset, f"{name}'s metrics", "JOBPOST_METRICS_PORT_BASE")
            for offset, name in enumerate(
                (
                    "linkedin-1",
                    "indeed-1",
                    "indexer-1",
                    "linkedin-2",
                    "indeed-2",
                    "indexer-2",
                    "webhooks-1",
                    "webhooks-2",
                )
            )
        ),
        (19090, "prometheus", "JOBPOST_RUN_PROMETHEUS_PORT"),
    }


def test_three_brokers_and_the_registry_name_their_settings(quiet_machine: None) -> None:
    settings = stack.StackSettings(brokers=3, registry=True, registry_port=18081)

    needed = {(p.number, p.setting) for p in ports_needed(RunSettings(), stack.servers(settings))}

    kafka = {(port, "JOBPOST_STACK_KAFKA_PORT") for port in range(9092, 9098)}
    registry = {(18081, "JOBPOST_STACK_REGISTRY_PORT"), (18082, "JOBPOST_STACK_REGISTRY_PORT")}
    assert kafka | registry <= needed


def test_a_server_of_our_stack_already_running_is_no_conflict(
    quiet_machine: None, held: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka = stack.KafkaServer(stack.StackSettings(kafka_port=held, kafka_controller_port=free_ports(1)))

    assert [line for line in refusals(ports_needed(RunSettings(), [kafka])) if f"port {held}" in line] == [
        f"port {held} (kafka) is taken, held by pid {os.getpid()} ({_this_command()});"
        " JOBPOST_STACK_KAFKA_PORT moves it"
    ]

    monkeypatch.setattr(stack.KafkaServer, "running", lambda _self: True)  # its pid file names a live one
    assert refusals(ports_needed(RunSettings(), [kafka])) == []


def test_prometheus_left_to_auto_is_not_a_port_the_run_insists_on(quiet_machine: None) -> None:
    needed = ports_needed(RunSettings(prometheus="auto", prometheus_port=19090), [])

    assert Port(19090, "prometheus", "JOBPOST_RUN_PROMETHEUS_PORT") not in needed


def _this_command() -> str:
    with open("/proc/self/cmdline", "rb") as cmdline:
        command = cmdline.read().replace(b"\0", b" ").decode().strip()
    return command if len(command) <= 160 else command[:157] + "..."
