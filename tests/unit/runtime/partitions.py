"""What a commit would say of a list of partitions: `TopicPartition`'s own `==` leaves the
offset out, so tests compare these triples instead."""

from __future__ import annotations

from confluent_kafka import TopicPartition


def offsets(partitions: list[TopicPartition]) -> list[tuple[str, int, int]]:
    return [(tp.topic, tp.partition, tp.offset) for tp in partitions]
