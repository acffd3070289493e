"""What the tests need beyond jobpost_dev.processes: an API process that hands out the test
client, and reading the postings topic back."""

from __future__ import annotations

import contextlib
import functools
import ssl

import httpx
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
from schemas.audit import AuditEvent
from schemas.model import PostingUpdate
from schemas.topics import Topics
from tests.client import ApiClient


class ApiProcess(processes.ApiProcess):
    """An API process (`jobpost api`) with the test client for it."""

    @functools.cached_property
    def client(self) -> ApiClient:
        return ApiClient(self.url, self.token)


class SplitApi(ApiProcess):
    """An API with an internal port (`internal_url`), whose readiness is asked there; with
    `tls` (a certificate and its key, PEM), both ports serve HTTPS and `verify` is the
    context a client checks them with."""

    def __init__(
        self, *args: object, tls: tuple[str, str] | None = None, ca: str | None = None, **env: str
    ) -> None:
        self.internal_port = free_port()
        if tls is not None:
            env = {**env, "JOBPOST_API_TLS_CERTFILE": tls[0], "JOBPOST_API_TLS_KEYFILE": tls[1]}
        super().__init__(*args, JOBPOST_API_INTERNAL_PORT=str(self.internal_port), **env)  # type: ignore[arg-type]
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.internal_url = f"{scheme}://127.0.0.1:{self.internal_port}"
        self.verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca) if ca else True

    def wait_ready(self, timeout: float = 60.0, needs: tuple[str, ...] = ("kafka", "sequencer")) -> None:
        def ready() -> bool:
            if self.popen.poll() is not None:
                raise AssertionError(f"{self.name} exited:\n{self.log_tail()}")
            try:
                answer = httpx.get(f"{self.internal_url}/readyz", timeout=2, verify=self.verify)
                checks = answer.json()["checks"]
            except (httpx.HTTPError, ValueError, KeyError):
                return False
            return all(checks.get(n) for n in needs)

        wait_until(ready, timeout, f"{self.name} to be ready on its internal port")


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


def audit_events(kafka: KafkaSettings) -> list[AuditEvent]:
    """Every committed record of `jobpost.audit`."""
    found: list[AuditEvent] = []

    def take(message: Message) -> None:
        found.append(codec.audit_events().decode(message.value() or b""))

    replay(kafka, Topics(kafka.topic_prefix).audit, range(kafka.partitions), take)
    return found


def versions_of(kafka: KafkaSettings, topic: str, posting_id: str) -> list[int]:
    return [v.version for k, _, v in read_postings(kafka, topic) if k == posting_id and v is not None]
