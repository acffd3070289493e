"""Typed access to a Kafka message's position."""

import pytest
from confluent_kafka import Message

from runtime.kafka import coordinates


def test_coordinates_of_a_record():
    message = Message(topic="jobpost.postings", partition=3, offset=41)
    assert coordinates(message) == ("jobpost.postings", 3, 41)


def test_an_event_without_a_position_is_refused_not_passed_on_as_none():
    with pytest.raises(ValueError, match="without topic, partition and offset"):
        coordinates(Message())
