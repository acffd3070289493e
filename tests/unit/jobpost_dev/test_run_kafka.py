"""JOBPOST_STACK_BROKERS=3 as `jobpost run` applies it: replicated topics, the three addresses."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from jobpost_dev import run, stack
from jobpost_dev.run import RunSettings
from jobpost_dev.run_env import component_env, kafka_env, kafka_settings
from runtime.kafka import KafkaSettings

KAFKA_VARIABLES = (
    "JOBPOST_KAFKA_BOOTSTRAP_SERVERS",
    "JOBPOST_KAFKA_REPLICATION_FACTOR",
    "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*KAFKA_VARIABLES, "JOBPOST_API_PORT", "JOBPOST_RUN_REPLICAS", "JOBPOST_STACK_BROKERS"):
        monkeypatch.delenv(name, raising=False)


def test_three_brokers_give_the_components_replicated_topics(tmp_path: Path) -> None:
    three = stack.StackSettings(dir=tmp_path, brokers=3)

    added = kafka_env(three, {})
    env = component_env("t", RunSettings(), added)
    topics = kafka_settings(added)

    assert added == {
        "JOBPOST_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092,127.0.0.1:9094,127.0.0.1:9096",
        "JOBPOST_KAFKA_REPLICATION_FACTOR": "3",
        "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": "2",
    }
    assert {name: env[name] for name in KAFKA_VARIABLES} == added
    assert (topics.bootstrap_servers, topics.replication_factor, topics.min_insync_replicas) == (
        "127.0.0.1:9092,127.0.0.1:9094,127.0.0.1:9096",
        3,
        2,
    )


def test_what_the_caller_sets_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_MIN_INSYNC_REPLICAS", "3")
    three = stack.StackSettings(dir=tmp_path, brokers=3)

    added = kafka_env(three, {"JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": "3"})

    assert "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS" not in added
    assert kafka_settings(added).min_insync_replicas == 3
    assert component_env("t", RunSettings(), added)["JOBPOST_KAFKA_MIN_INSYNC_REPLICAS"] == "3"


def test_one_broker_sets_replication_one_explicitly(tmp_path: Path) -> None:
    added = kafka_env(stack.StackSettings(dir=tmp_path, kafka_port=19092), {})

    assert added == {
        "JOBPOST_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:19092",
        "JOBPOST_KAFKA_REPLICATION_FACTOR": "1",
        "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": "1",
    }
    topics = kafka_settings(added)
    assert (topics.replication_factor, topics.min_insync_replicas) == (1, 1)


def test_a_kafka_of_the_callers_gets_the_cluster_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = {"JOBPOST_KAFKA_BOOTSTRAP_SERVERS": "kafka.internal:9093"}
    monkeypatch.setenv("JOBPOST_KAFKA_BOOTSTRAP_SERVERS", own["JOBPOST_KAFKA_BOOTSTRAP_SERVERS"])

    added = kafka_env(stack.StackSettings(dir=tmp_path), own)

    assert added == {}
    topics = kafka_settings(added)
    assert (topics.replication_factor, topics.min_insync_replicas) == (3, 2)


def test_run_creates_the_topics_replicated_on_three_brokers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_STACK_BROKERS", "3")
    monkeypatch.setenv("JOBPOST_RUN_SERVERS", "false")
    monkeypatch.setattr(signal, "signal", lambda *_args: None)
    ensured: list[KafkaSettings] = []

    def ensure_topics(settings: KafkaSettings) -> list[str]:
        ensured.append(settings)
        raise KeyboardInterrupt  # stop the run here

    monkeypatch.setattr(run, "ensure_topics", ensure_topics)
    monkeypatch.setattr(run, "ports_needed", lambda *_: [])  # 8000 and the rest may be in use here

    assert run.run() == 0

    (settings,) = ensured
    assert (settings.replication_factor, settings.min_insync_replicas) == (3, 2)
    assert settings.bootstrap_servers == "127.0.0.1:9092,127.0.0.1:9094,127.0.0.1:9096"
