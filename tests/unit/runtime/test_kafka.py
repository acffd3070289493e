"""Typed access to a Kafka message's position."""

import pytest
from confluent_kafka import KafkaError, KafkaException, Message

from runtime.kafka import coordinates, is_record


def test_coordinates_of_a_record():
    message = Message(topic="jobpost.postings", partition=3, offset=41)
    assert coordinates(message) == ("jobpost.postings", 3, 41)


def test_an_event_without_a_position_is_refused_not_passed_on_as_none():
    with pytest.raises(ValueError, match="without topic, partition and offset"):
        coordinates(Message())


def test_a_coordinator_on_the_move_is_passed_over_and_a_real_error_ends_the_session():
    moving = KafkaError(KafkaError.NOT_COORDINATOR, "Failed to fetch committed offsets: Not coordinator")
    assert not moving.retriable()  # as librdkafka reports it after a broker left
    assert is_record(Message(error=moving)) is False
    assert is_record(Message(error=KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS))) is False
    with pytest.raises(KafkaException):
        is_record(Message(error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    with pytest.raises(KafkaException):  # fatal is fatal, whatever the code
        is_record(Message(error=KafkaError(KafkaError.NOT_COORDINATOR, fatal=True)))
