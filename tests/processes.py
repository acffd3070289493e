"""What the tests need beyond jobpost_dev.processes: an API process that hands out the test
client, and reading the postings topic back."""

from __future__ import annotations

import contextlib
import functools

from confluent_kafka import Message

from jobpost_dev import processes
from jobpost_dev.processes import (  # noqa: F401 - the tests import them from here
    Process,
    free_port,
    kafka_env,
    wait_until,
)
from runtime.kafka import KafkaSettings
from runtime.replay import replay
from schemas import codec
from schemas.model import PostingUpdate
from tests.client import ApiClient


class ApiProcess(processes.ApiProcess):
    """An API process (`jobpost api`) with the test client for it."""

    @functools.cached_property
    def client(self) -> ApiClient:
        return ApiClient(self.url, self.token)


def running_api(
    kafka: KafkaSettings, token: str, elasticsearch_url: str, **env: str
) -> contextlib.AbstractContextManager[ApiProcess]:
    """An API process ready to serve, stopped afterwards."""
    return processes.running(ApiProcess(kafka, token, elasticsearch_url, **env))


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
