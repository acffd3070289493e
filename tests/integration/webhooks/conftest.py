"""Webhooks against real Kafka: the API (with a credentials file: employers acme and globex),
the dispatcher as `jobpost webhooks` runs it, and receivers that are real HTTP servers in
the test, verifying every delivery with `standardwebhooks` as an employer would."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from cryptography.fernet import Fernet

from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.listing_events import listing_event, publish_listing_event
from schemas.listing_events import Listing, ListingEvent
from schemas.partitioning import partition_for
from schemas.topics import Topics
from tests import postings
from tests.client import ApiClient
from tests.integration.webhooks.receiver import Receiver, now_ms
from tests.processes import ApiProcess, Process, free_port, kafka_env, wait_until

DEV_TOKEN = "webhooks-dev-token"
TOKENS = {name: f"{name}-{uuid.uuid4().hex}" for name in ("ats-acme", "ats-globex", "reader-acme")}
GRANTS = {
    "ats-acme": ("acme", ["postings:read", "postings:write"]),
    "ats-globex": ("globex", ["postings:read", "postings:write"]),
    "reader-acme": ("acme", ["postings:read"]),
}


@dataclass
class WebhookSystem:
    kafka: KafkaSettings
    api: ApiProcess
    key: str
    producer: Producer
    dispatchers: list[Process] = field(default_factory=list)
    metrics_port: int = 0

    clients: dict[str | None, ApiClient] = field(default_factory=dict)

    def client(self, name: str | None = None) -> ApiClient:
        """A client with the credential `name` (None: the development token), one per name."""
        if name not in self.clients:
            self.clients[name] = ApiClient(self.api.url, TOKENS[name] if name else DEV_TOKEN)
        return self.clients[name]

    def start_dispatcher(self, **env: str) -> Process:
        """`jobpost webhooks` on this system's topics (retries without jitter, commits every
        0.2 s, metrics on a port of its own), once its metrics answer."""
        self.metrics_port = free_port()
        settings = {
            **kafka_env(self.kafka),
            "JOBPOST_WEBHOOK_SECRETS_KEY": self.key,
            "JOBPOST_WEBHOOKS_METRICS_PORT": str(self.metrics_port),
            "JOBPOST_WEBHOOKS_COMMIT_INTERVAL_S": "0.2",
            "JOBPOST_WEBHOOKS_RETRY_JITTER": "0",
        }
        process = Process("webhooks", ["webhooks"], {**settings, **env})
        self.dispatchers.append(process)

        def serving() -> bool:
            assert process.popen.poll() is None, process.log_tail()
            return self.metrics() is not None

        wait_until(serving, 60, "the dispatcher's metrics")
        return process

    def metrics(self) -> str | None:
        try:
            return httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).text
        except httpx.HTTPError:
            return None

    def metric(self, name: str, labels: str = "") -> float:
        """The sum of a metric's samples whose labels begin with `labels` (0 when none)."""
        text = self.metrics() or ""
        prefix = f"{name}{{{labels}" if labels else name
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))

    def register(self, employer: str, receiver: Receiver, events: list[str] | None = None) -> dict:
        body = {"url": receiver.url, **({"events": events} if events is not None else {})}
        made = self.client(f"ats-{employer}").request("POST", "/webhooks", json=body, expect=201)
        receiver.secrets.append(made["secret"])
        return made

    def publish(
        self, employer: str, posting_id: str, version: int, kind: str = "listing.live"
    ) -> ListingEvent:
        """A board's event, as a board consumer publishes it."""
        url = f"https://www.linkedin.com/jobs/view/{posting_id}"
        listing = Listing(kind.removeprefix("listing."), now_ms(), f"urn:li:jobPosting:{posting_id}", url)
        event = listing_event(kind, employer, posting_id, version, board="linkedin", listing=listing)
        partition = partition_for(posting_id, self.kafka.partitions)
        publish_listing_event(self.producer, Topics(self.kafka.topic_prefix), partition, event)
        self.producer.poll(0)
        return event


def credentials_document() -> str:
    entries = [
        {
            "name": n,
            "token_sha256": hashlib.sha256(TOKENS[n].encode()).hexdigest(),
            "employer": e,
            "scopes": s,
        }
        for n, (e, s) in GRANTS.items()
    ]
    return json.dumps({"credentials": entries})


@pytest.fixture
def webhooks_api_env() -> dict[str, str]:
    """Settings of the test's API beyond the fixture's (a test may change them)."""
    return {}


@pytest.fixture
def system(kafka, elasticsearch_url, tmp_path: Path, webhooks_api_env) -> Iterator[WebhookSystem]:
    key = Fernet.generate_key().decode()
    credentials = tmp_path / "credentials.json"
    credentials.write_text(credentials_document())
    employers = tmp_path / "employers.json"  # whom they write for, at both boards
    employers.write_text(postings.employers_document(*{employer for employer, _ in GRANTS.values()}))
    settings = {
        "JOBPOST_API_CREDENTIALS_FILE": str(credentials),
        "JOBPOST_API_EMPLOYERS_FILE": str(employers),
        "JOBPOST_WEBHOOK_SECRETS_KEY": key,
        "JOBPOST_API_WEBHOOK_LOCAL_HTTP": "true",
        **webhooks_api_env,
    }
    api = ApiProcess(kafka, DEV_TOKEN, elasticsearch_url, **settings)
    producer = KafkaClients(kafka).producer()
    started = WebhookSystem(kafka, api, key, producer)
    try:
        api.wait_ready()
        yield started
    finally:
        for client in started.clients.values():
            client.close()
        for process in started.dispatchers:
            process.stop()
        api.stop()
        producer.flush(10)
