"""`jobpost run` (`make run`): the local servers plus every component, each a supervised
child process (supervisor.py).

JOBPOST_RUN_REPLICAS=n runs n of each component but the sandbox: API replicas on api_port,
api_port+1, ...; replica r of LinkedIn, Indeed and the indexer serves metrics on
metrics_port_base + 3(r-1) + 0, 1, 2. With one replica the names are api, linkedin, indeed,
indexer; with more, api-1, api-2, linkedin-1 ... The topics and the components get the
stack's replication unless set: factor 1 and min.insync.replicas 1 on one broker, 3 and 2
with JOBPOST_STACK_BROKERS=3.

Before it starts anything it checks every port it will listen on (the stack's servers not
running yet, the components, Prometheus when insisted on) and refuses, exit status 2, naming
each taken one, the setting that moves it and what holds it. A server of the stack already
running (`jobpost stack start` before) is no conflict. SIGINT or SIGTERM stops the
components in reverse order, then the servers this run started, leaving no process behind.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobpost_dev import prometheus, stack
from jobpost_dev.ports import Port, refusals
from jobpost_dev.project import project_root
from jobpost_dev.run_env import component_env, kafka_env, kafka_settings, registry_env
from jobpost_dev.supervisor import Component, Supervisor
from runtime.kafka import KafkaSettings
from runtime.topics import ensure_topics
from schemas.topics import BOARDS


class RunSettings(BaseSettings):
    """What `jobpost run` starts and where. `JOBPOST_RUN_SERVERS` and `JOBPOST_RUN_REPLICAS`
    carry the prefix; the ports and tokens keep the names the components themselves read."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_RUN_", populate_by_name=True)

    servers: bool = True  # false: Kafka and Elasticsearch are managed elsewhere
    replicas: int = Field(default=1, ge=1)  # of every component but the sandbox
    api_port: int = Field(default=8000, validation_alias="JOBPOST_API_PORT")
    sandbox_port: int = Field(default=8090, validation_alias="JOBPOST_SANDBOX_PORT")
    metrics_port_base: int = Field(default=9101, validation_alias="JOBPOST_METRICS_PORT_BASE")
    api_tokens: SecretStr | None = Field(default=None, validation_alias="JOBPOST_API_TOKENS")
    # Each component keeps its local stores in a folder of its own under this one, so a
    # restarted component finds its state again. Default: the project's `.state/`.
    state_dir: Path = Field(
        default_factory=lambda: project_root() / ".state",
        validation_alias="JOBPOST_STATE_DIR",
    )
    # Prometheus scraping every component, with the rules of deploy/prometheus/ (see
    # jobpost_dev/prometheus.py): auto = when installed and its port is free.
    prometheus: Literal["auto", "true", "false"] = "auto"
    prometheus_port: int = 9090

    def token(self) -> str:
        """The tokens given, or a fresh one for this run."""
        given = self.api_tokens.get_secret_value() if self.api_tokens else ""
        return given or secrets.token_urlsafe(24)


def components(settings: RunSettings) -> list[Component]:
    """Every component, in start order (stopped in reverse)."""
    jobpost = [sys.executable, "-m", "jobpost.cli"]
    sandbox_port, metrics, n = (
        settings.sandbox_port,
        settings.metrics_port_base,
        settings.replicas,
    )

    def name(kind: str, replica: int) -> str:
        return kind if n == 1 else f"{kind}-{replica}"

    ports = [settings.api_port + r for r in range(n)]

    apis = [
        Component(
            name("api", r),
            [*jobpost, "api"],
            f"http://127.0.0.1:{port} (docs at /docs)",
            # The replica's sequencer member keeps its name across restarts (static
            # membership): a restarted replica takes its partitions back at once. No snapshot
            # peers: each replica keeps its state folder across restarts, and /ops/snapshot is
            # served on an internal port only, which make run does not open.
            {"JOBPOST_API_PORT": str(port), "JOBPOST_SEQUENCER_INSTANCE_ID": name("api", r)},
            f"127.0.0.1:{port}",
            Port(port, name("api", r), "JOBPOST_API_PORT"),
        )
        for r, port in enumerate(ports, start=1)
    ]
    workers = [
        Component(
            name(kind, r),
            argv,
            f"metrics http://127.0.0.1:{port}/metrics",
            {variable: str(port)},
            f"127.0.0.1:{port}",
            Port(port, f"{name(kind, r)}'s metrics", "JOBPOST_METRICS_PORT_BASE"),
        )
        for kind, argv, variable, offset in (
            *(
                (
                    board.value,
                    [*jobpost, "consumer", board.value],
                    "JOBPOST_CONSUMER_METRICS_PORT",
                    offset,
                )
                for offset, board in enumerate(BOARDS)
            ),
            ("indexer", [*jobpost, "indexer"], "JOBPOST_INDEXER_METRICS_PORT", 2),
        )
        for r, port in ((r, metrics + 3 * (r - 1) + offset) for r in range(1, n + 1))
    ]
    for component in (*apis, *workers):
        component.env["JOBPOST_STATE_DIR"] = str(settings.state_dir / component.name)
    sandbox = Component(
        "sandbox",
        [*jobpost, "sandbox", "--port", str(sandbox_port)],
        f"http://127.0.0.1:{sandbox_port}",
        listens=Port(sandbox_port, "sandbox", "JOBPOST_SANDBOX_PORT"),
    )
    return [sandbox, *apis, *workers]


def ports_needed(settings: RunSettings, servers: Sequence[stack.Managed]) -> list[Port]:
    """Every port this run will listen on: those of the stack's servers it will start (one
    running already is ours, `jobpost stack start` before, and no conflict), every
    component's, and Prometheus' when it is insisted on (`auto` runs without it instead)."""
    needed = [
        port
        for server in servers
        for member in server.members()
        if not member.running()
        for port in member.ports()
    ]
    needed += [component.listens for component in components(settings) if component.listens]
    if settings.prometheus == "true":
        needed.append(Port(settings.prometheus_port, "prometheus", "JOBPOST_RUN_PROMETHEUS_PORT"))
    return needed


def run() -> int:
    settings = RunSettings()
    stack_settings = stack.StackSettings()
    servers = stack.servers(stack_settings) if settings.servers else []
    refused = refusals(ports_needed(settings, servers))
    if refused:
        lines = [
            *refused,
            "make run started nothing: free those ports, or move them with the settings named",
        ]
        print("\n".join(f"error: {line}" for line in lines), file=sys.stderr, flush=True)
        return 2
    kafka = kafka_env(stack_settings, os.environ)
    started: list[stack.Managed] = []
    supervisor: Supervisor | None = None

    def _stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    monitoring, why_not = prometheus.available(settings.prometheus, settings.prometheus_port)
    try:
        for server in servers:
            print(f"starting {server.name} ...", flush=True)
            if server.running():
                continue
            started.append(server)  # stopped below even when its start is interrupted
            if not server.start(progress=_say):
                started.remove(server)  # someone else started it meanwhile
        kafka_config = kafka_settings(kafka)
        ensure_topics(kafka_config)
        token = settings.token()
        parts = components(settings)
        if monitoring:  # started last, so stopped first
            folder, port = stack_settings.dir / "prometheus", settings.prometheus_port
            parts.append(Component("prometheus", *prometheus.launch(monitoring, folder, port, parts)))
        else:
            print(f"prometheus: {why_not}; running without it", flush=True)
        env = component_env(token, settings, {**kafka, **registry_env(stack_settings, os.environ)})
        supervisor = Supervisor(parts, stack_settings.dir / "logs", env)
        for component in supervisor.components:
            supervisor.start(component)
        _announce(stack_settings, kafka_config, supervisor, token)
        while True:
            supervisor.watch_once()
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nstopping ...", flush=True)
    finally:
        if supervisor:
            supervisor.stop_all()
        for server in reversed(started):
            server.stop_launched()  # of a Kafka cluster found partly running: the nodes it started
        print("stopped everything this run started", flush=True)
    return 0


def _say(message: str) -> None:
    print(message, flush=True)


def _announce(
    settings: stack.StackSettings,
    kafka: KafkaSettings,
    supervisor: Supervisor,
    token: str,
) -> None:
    replication, registry = "", supervisor.env.get("JOBPOST_SCHEMA_REGISTRY_URL")
    if kafka.replication_factor > 1:
        replication = (
            f" (topics: replication factor {kafka.replication_factor},"
            f" min.insync.replicas {kafka.min_insync_replicas})"
        )
    lines = [
        "jobpost is running:",
        f"  Kafka          {kafka.bootstrap_servers}{replication}",
        f"  Elasticsearch  {settings.elasticsearch_url}",
        *([f"  schema registry {supervisor.env['JOBPOST_SCHEMA_REGISTRY_URL']}"] if registry else []),
        *(f"  {c.name:<14} {c.address}" for c in supervisor.components if c.address),
        f"  logs           {settings.dir / 'logs'}",
        f"  API token      {token}",
        "  README.md walks through a first posting with curl.",
        "Ctrl-C stops everything.",
    ]
    print("\n".join(lines), flush=True)
