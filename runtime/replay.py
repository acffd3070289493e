"""Reading a compacted topic's partitions from the beginning to their current end.

Used wherever state is rebuilt from a log: the sequencer on assignment, the API's views,
the delivery runner's retry state, the search reindex. The end is where the broker says
the partition ends when the read starts (read_committed: the last stable offset), so a
replay always terminates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from runtime.kafka import KafkaSettings, coordinates, poll_batch
from runtime.kafka_clients import KafkaClients
from schemas.topics import ReaderGroup, Topics


def replay(
    kafka: KafkaSettings,
    topic: str,
    partitions: Iterable[int],
    on_message: Callable[[Message], None],
    timeout_s: float = 120.0,
    start: dict[int, int] | None = None,
) -> dict[int, int]:
    """Feed every committed record of the partitions to `on_message`, in offset order per
    partition, from the beginning (or from `start`). Returns the next offset of each
    partition (where a follower would resume)."""
    wanted = set(partitions)
    if not wanted:
        return {}
    consumer = KafkaClients(kafka).reader(
        Topics(kafka.topic_prefix).reader_group(ReaderGroup.REPLAY), ends=True, prompt_end=True
    )
    ends: dict[int, int] = {}
    try:
        consumer.assign([TopicPartition(topic, p, (start or {}).get(p, OFFSET_BEGINNING)) for p in wanted])
        _read_until_eof(consumer, wanted, ends, on_message, timeout_s)
    finally:
        consumer.close()
    return ends


def _read_until_eof(
    consumer: Consumer,
    wanted: set[int],
    ends: dict[int, int],
    on_message: Callable[[Message], None],
    timeout_s: float,
) -> None:
    deadline = time.monotonic() + timeout_s
    while len(ends) < len(wanted):
        if time.monotonic() > deadline:
            raise TimeoutError(f"replay did not reach the end of partitions {sorted(wanted - set(ends))}")
        for message in poll_batch(consumer, 1000, 0.5):
            error = message.error()
            if error is None:
                on_message(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                _, partition, offset = coordinates(message)
                ends[partition] = offset
            elif not error.retriable():
                raise KafkaException(error)
