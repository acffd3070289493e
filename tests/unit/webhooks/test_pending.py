"""A partition's deliveries read back on assignment: what waits, what finished lately."""

from __future__ import annotations

from dataclasses import replace

from confluent_kafka import Message

from schemas import codec
from tests.unit.webhooks.fakes import event, queued
from webhooks.pending import Restored


def record(key: str, value: bytes | None) -> Message:
    return Message(topic="jobpost.webhook-pending", partition=0, offset=0, key=key.encode(), value=value)


def test_the_newest_state_of_each_waiting_delivery_is_restored_and_tombstoned_ones_are_finished():
    first = queued("a", event("p1", 0, 1), offset=10).delivery
    second = queued("a", event("p1", 1, 2), offset=11).delivery
    restored = Restored()
    restored.fold(record(first.key, codec.webhook_deliveries().encode(first)))
    restored.fold(record(second.key, codec.webhook_deliveries().encode(second)))
    retried = replace(second, attempts=2, next_attempt_at=99)
    restored.fold(record(second.key, codec.webhook_deliveries().encode(retried)))
    restored.fold(record(first.key, None))
    assert restored.waiting == {second.key: retried}
    assert restored.finished == {first.key: ("listing-events", 10)}


def test_an_unreadable_record_is_passed_over():
    restored = Restored()
    restored.fold(record("a/e", b"not avro"))
    restored.fold(record("a/e2", None))  # a tombstone whose record was compacted away
    assert (restored.waiting, restored.finished) == ({}, {})
