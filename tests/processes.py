"""What the tests need beyond jobpost.processes: reading the postings topic back."""

from __future__ import annotations

from confluent_kafka import Message

from jobpost.processes import (  # noqa: F401 - the tests import them from here
    ApiProcess,
    Process,
    free_port,
    kafka_env,
    running_api,
    wait_until,
)
from runtime.kafka import KafkaSettings
from runtime.replay import replay
from schemas import codec
from schemas.model import PostingUpdate


def read_postings(kafka: KafkaSettings, topic: str) -> list[tuple[str, int, PostingUpdate | None]]:
    """Every committed record of the postings topic: (key, partition, decoded value or None)."""
    records: list[tuple[str, int, PostingUpdate | None]] = []

    def take(message: Message) -> None:
        value = message.value()
        decoded = codec.posting_updates().decode(value) if value is not None else None
        records.append(((message.key() or b"").decode(), message.partition() or 0, decoded))

    replay(kafka, topic, range(kafka.partitions), take)
    return records


def versions_of(kafka: KafkaSettings, topic: str, posting_id: str) -> list[int]:
    return [v.version for k, _, v in read_postings(kafka, topic) if k == posting_id and v is not None]
