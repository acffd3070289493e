"""The sequencer member's Kafka clients: a static group member under its instance id, a
transactional producer under the same name, both giving up on a silent broker in seconds,
in a configuration librdkafka accepts."""

from __future__ import annotations

from typing import Any

import pytest

from runtime import kafka_clients
from runtime.kafka import KafkaSettings
from sequencer.config import SequencerSettings
from sequencer.session import member_clients


def settings(**changes: object) -> SequencerSettings:
    kafka = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic_prefix="unit")  # no broker is asked
    return SequencerSettings(kafka=kafka, **{"instance_id": "api-1", **changes})  # type: ignore[arg-type]


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The librdkafka properties of each client made, instead of the client."""
    configs: list[dict[str, Any]] = []
    monkeypatch.setattr(kafka_clients, "Consumer", configs.append)
    monkeypatch.setattr(kafka_clients, "Producer", configs.append)
    return configs


def configs_of(
    member: SequencerSettings, made: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    made.clear()
    member_clients(member)
    consumer, producer = made
    return consumer, producer


def test_a_member_restarted_under_its_name_is_the_same_group_member_and_transactional_producer(
    made: list[dict[str, Any]],
) -> None:
    consumer, producer = configs_of(settings(), made)

    assert consumer["group.instance.id"] == "api-1"
    assert consumer["group.id"] == "unit-sequencer"
    assert producer["transactional.id"] == "unit-sequencer-api-1"
    # A replaced member gets its predecessor's whole assignment: no partition is withheld.
    assert consumer["partition.assignment.strategy"] == "range"


def test_an_unnamed_member_is_dynamic_and_keeps_one_transactional_id_for_its_process(
    made: list[dict[str, Any]],
) -> None:
    """A static member that stops keeps its partitions until its session timeout: only a
    member that comes back under its name is one."""
    member = settings(instance_id=None)
    consumer, producer = configs_of(member, made)

    assert "group.instance.id" not in consumer
    assert consumer["partition.assignment.strategy"] == "cooperative-sticky"
    transactional_id = producer["transactional.id"]
    assert transactional_id.startswith("unit-sequencer-")
    assert configs_of(member, made)[1]["transactional.id"] == transactional_id  # every session's
    assert configs_of(settings(instance_id=None), made)[1]["transactional.id"] != transactional_id


def test_a_silent_broker_is_given_up_on_within_seconds_not_librdkafkas_minute(
    made: list[dict[str, Any]],
) -> None:
    consumer, producer = configs_of(settings(), made)

    assert consumer["socket.timeout.ms"] == 5_000
    assert producer["socket.timeout.ms"] == 5_000
    assert producer["transaction.timeout.ms"] == 6_000
    # librdkafka wants the socket timeout no longer than the transaction timeout.
    assert configs_of(settings(transaction_timeout_ms=3_000), made)[1]["socket.timeout.ms"] == 3_000


def test_librdkafka_accepts_the_clients_even_with_a_transaction_timeout_below_the_socket_timeout() -> None:
    for member in (settings(), settings(transaction_timeout_ms=3_000)):
        consumer, _producer = member_clients(member)  # raises KafkaException for a combination it refuses
        consumer.close()
