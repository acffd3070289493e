"""The sequencer member's Kafka clients: a static group member under its instance id, a
transactional producer under the same name, both giving up on a silent broker in seconds,
in a configuration librdkafka accepts."""

from __future__ import annotations

from confluent_kafka import Consumer, Producer

from runtime.kafka import KafkaSettings
from sequencer.config import SequencerSettings


def settings(**changes: object) -> SequencerSettings:
    kafka = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic_prefix="unit")  # no broker is asked
    return SequencerSettings(kafka=kafka, **{"instance_id": "api-1", **changes})  # type: ignore[arg-type]


def test_a_member_restarted_under_its_name_is_the_same_group_member_and_transactional_producer() -> None:
    member = settings()

    assert member.member_config()["group.instance.id"] == "api-1"
    assert member.member_config()["group.id"] == "unit-sequencer"
    assert member.producer_config()["transactional.id"] == "unit-sequencer-api-1"
    # A replaced member gets its predecessor's whole assignment: no partition is withheld.
    assert member.member_config()["partition.assignment.strategy"] == "range"


def test_an_unnamed_member_is_dynamic_and_keeps_one_transactional_id_for_its_process() -> None:
    """A static member that stops keeps its partitions until its session timeout: only a
    member that comes back under its name is one."""
    member = settings(instance_id=None)

    assert "group.instance.id" not in member.member_config()
    assert member.member_config()["partition.assignment.strategy"] == "cooperative-sticky"
    transactional_id = member.producer_config()["transactional.id"]
    assert transactional_id.startswith("unit-sequencer-")
    assert member.producer_config()["transactional.id"] == transactional_id  # every session's
    assert settings(instance_id=None).producer_config()["transactional.id"] != transactional_id


def test_a_silent_broker_is_given_up_on_within_seconds_not_librdkafkas_minute() -> None:
    member = settings()

    assert member.member_config()["socket.timeout.ms"] == 5_000
    assert member.producer_config()["socket.timeout.ms"] == 5_000
    assert member.producer_config()["transaction.timeout.ms"] == 6_000


def test_librdkafka_accepts_the_clients_even_with_a_transaction_timeout_below_the_socket_timeout() -> None:
    for member in (settings(), settings(transaction_timeout_ms=3_000)):
        producer_config = member.producer_config()
        assert producer_config["socket.timeout.ms"] <= producer_config["transaction.timeout.ms"]
        Producer(producer_config)  # raises KafkaException for a combination it refuses
        Consumer(member.member_config()).close()
