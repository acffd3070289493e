"""Every Kafka client is made by `runtime.kafka_clients`, from the settings: the connection's
properties reach every kind of client, and what the design fixes for a kind is set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from runtime import kafka_clients
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients

ROOT = Path(__file__).resolve().parents[3]
# What an operator deploys, and the tools that run against it (the development harness's
# local stack and chaos tools are made from their own bootstrap address).
PACKAGES = (
    "schemas",
    "runtime",
    "listing",
    "sequencer",
    "producer_api",
    "consumers",
    "search_indexer",
    "webhooks",
    "jobpost",
    "bench",
    "dev/jobpost_dev",
)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The librdkafka properties of each client made, instead of the client."""
    configs: list[dict[str, Any]] = []
    for kind in ("Consumer", "Producer", "AdminClient"):
        monkeypatch.setattr(kafka_clients, kind, configs.append)
    return configs


def clients() -> KafkaClients:
    return KafkaClients(
        KafkaSettings(
            bootstrap_servers="broker:9093",
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username="jobpost",
            sasl_password=SecretStr("secret"),
            config={"ssl.ca.location": "/etc/ca.pem"},
        )
    )


def every_kind(factory: KafkaClients) -> None:
    factory.admin()
    factory.producer()
    factory.transactional("t")
    factory.member("g", session_timeout_ms=10_000)
    factory.reader("r")
    factory.probe("p", committed=False)


def test_the_connection_and_its_security_reach_every_client(made: list[dict[str, Any]]) -> None:
    every_kind(clients())

    assert len(made) == 6
    for config in made:
        assert config["bootstrap.servers"] == "broker:9093"
        assert config["security.protocol"] == "SASL_SSL"
        assert (config["sasl.username"], config["sasl.password"]) == ("jobpost", "secret")
        assert config["ssl.ca.location"] == "/etc/ca.pem"


def test_every_producer_is_idempotent_waits_for_all_replicas_and_partitions_like_java(
    made: list[dict[str, Any]],
) -> None:
    every_kind(clients())

    producers = [config for config in made if "acks" in config]
    assert len(producers) == 2
    for config in producers:
        assert (config["acks"], config["enable.idempotence"], config["partitioner"]) == (
            "all",
            True,
            "murmur2_random",
        )


def test_every_consumer_reads_committed_records_and_commits_only_what_is_done(
    made: list[dict[str, Any]],
) -> None:
    factory = clients()
    factory.member("g")
    factory.reader("r", gathered=True)
    factory.probe("p")

    for config in made:
        assert config["isolation.level"] == "read_committed"
        assert (config["enable.auto.commit"], config["enable.auto.offset.store"]) == (False, False)
    member, reader, _ = made
    assert member["partition.assignment.strategy"] == "cooperative-sticky"
    assert reader["fetch.wait.max.ms"] == 500  # gathered
    assert "fetch.wait.max.ms" not in member  # not gathered: Kafka's 500 ms, answered at once


def test_a_patient_reader_is_answered_at_once_and_asks_rarely_when_idle(made: list[dict[str, Any]]) -> None:
    factory = clients()
    factory.reader("r", ends=True, small_prefetch=True, patient=True)
    (reader,) = made
    assert reader["fetch.wait.max.ms"] == 2000
    assert "fetch.min.bytes" not in reader  # Kafka's 1: the first record ends the wait
    for forbidden in ({"gathered": True}, {"prompt_end": True}, {"write_path": True}):
        with pytest.raises(ValueError):
            factory.reader("r", patient=True, **forbidden)


def test_librdkafka_accepts_every_kind() -> None:
    factory = KafkaClients(KafkaSettings(bootstrap_servers="127.0.0.1:1"))  # no broker is asked
    for consumer in (
        factory.member(
            "g",
            session_timeout_ms=10_000,
            instance_id="i",
            eager=True,
            write_path=True,
            gathered=True,
            ends=True,
        ),
        factory.reader("r", ends=True, prompt_end=True, small_prefetch=True, write_path=True, gathered=True),
        factory.reader("r", ends=True, small_prefetch=True, patient=True),
        factory.probe("p", committed=False),
    ):
        consumer.close()
    factory.producer(linger_ms=1, give_up_after_ms=5_000, write_path=True, bulk=True, on_statistics=print)
    factory.transactional("t", timeout_ms=3_000)
    factory.admin()


def test_no_client_is_made_outside_the_factory() -> None:
    """So a security property or a timeout is set in one place: `runtime/kafka_clients.py`."""
    construction = re.compile(r"(?<![\w.])(Producer|Consumer|AdminClient)\(")
    offenders = [
        f"{path.relative_to(ROOT)}:{text[: found.start()].count(chr(10)) + 1}"
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path != ROOT / "runtime" / "kafka_clients.py"
        for text in [path.read_text()]
        for found in construction.finditer(text)
    ]
    assert offenders == []
