"""Topics that do not give what the design needs are refused, by `jobpost topics` and by every
component at start: exit 2, one line per problem, on the real broker."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from jobpost_dev.processes import free_port
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.topics import TopicMismatchError, ensure_topics
from schemas.topics import DAY_MS, Component, Topics

# Components, as `jobpost <command>` runs them.
COMPONENTS = [["api"], ["sequencer"], ["consumer", "linkedin"], ["consumer", "indeed"], ["indexer"]]


def jobpost(
    kafka: KafkaSettings, *command: str, timeout: float = 60, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobpost.cli", *command],
        env={**os.environ, **kafka.environment(), "JOBPOST_API_TOKENS": "t", **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def errors(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


def alter(kafka: KafkaSettings, topic: str, **values: str) -> None:
    admin = KafkaClients(kafka).admin()
    entries = [
        ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
        for k, v in values.items()
    ]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def test_topics_that_keep_too_little_are_refused_one_line_each(kafka: KafkaSettings, topics: Topics):
    alter(kafka, topics.postings, delete_retention_ms=str(DAY_MS), min_compaction_lag_ms="0")
    alter(kafka, topics.dlq(Component.LINKEDIN), retention_ms=str(DAY_MS))
    expected = [
        f"error: {topics.postings} has min.compaction.lag.ms=0, expected at least 604800000 (7 days)",
        f"error: {topics.postings} has delete.retention.ms=86400000 (1 day),"
        " expected at least 604800000 (7 days)",
        f"error: {topics.dlq(Component.LINKEDIN)} has retention.ms=86400000 (1 day),"
        " expected at least 2592000000 (30 days)",
    ]

    result = jobpost(kafka, "topics")

    assert result.returncode == 2, result.stderr
    assert errors(result) == expected
    with pytest.raises(TopicMismatchError) as refused:
        ensure_topics(kafka)
    assert [f"error: {p}" for p in refused.value.problems] == expected


@pytest.mark.serial  # seven components refused within a minute
def test_every_component_refuses_to_start_on_topics_with_too_few_replicas(kafka: KafkaSettings):
    cluster = kafka.model_copy(update={"replication_factor": 2})  # the topics have 1
    started = time.monotonic()

    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "jobpost.cli", *command],
            env={**os.environ, **cluster.environment(), "JOBPOST_API_TOKENS": "t"},
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        for command in COMPONENTS
    ]
    results = [(run.wait(120), run.stderr.read() if run.stderr else "") for run in runs]

    assert time.monotonic() - started < 60
    for command, (code, stderr) in zip(COMPONENTS, results, strict=True):
        lines = [line for line in stderr.splitlines() if line.startswith("error: ")]
        assert code == 2, (command, stderr)
        assert len(lines) == len(Topics(kafka.topic_prefix).specs(3, 1)), (command, lines)
        assert all("has replication factor 1, expected at least 2" in line for line in lines), lines


def test_a_component_refuses_to_start_without_its_topics(kafka: KafkaSettings, topics: Topics):
    admin = KafkaClients(kafka).admin()
    admin.delete_topics([topics.commands])[topics.commands].result(30)

    result = jobpost(kafka, "sequencer")

    assert result.returncode == 2, result.stderr
    assert errors(result) == [
        f"error: {topics.commands} does not exist (`jobpost topics` creates every topic)"
    ]


@pytest.mark.serial  # said so within 20 s
def test_a_kafka_that_does_not_answer_is_said_so_in_seconds(kafka: KafkaSettings):
    nowhere = kafka.model_copy(
        update={"bootstrap_servers": f"127.0.0.1:{free_port()}", "start_timeout_s": 3.0}
    )
    started = time.monotonic()

    result = jobpost(nowhere, "topics")

    assert result.returncode == 2
    assert (
        errors(result)[0]
        == f"error: Kafka at {nowhere.bootstrap_servers} (PLAINTEXT) did not answer within 3 s"
    )
    assert time.monotonic() - started < 20
