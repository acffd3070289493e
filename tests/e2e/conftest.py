"""The system as `make run` starts it (`jobpost run`), for end-to-end tests."""

import contextlib
from collections.abc import Iterator

import httpx
import pytest

from jobpost_dev.processes import Process, component_pids, free_port, free_ports, kafka_env, wait_until
from runtime.kafka import KafkaSettings
from tests.client import ApiClient

TOKEN = "journey-token"


class System:
    """The running system: the API's address and a test client for it, the sandbox's."""

    def __init__(self, process: Process, url: str, sandbox: str, prefix: str) -> None:
        self.process = process
        self.url = url
        self.sandbox = sandbox
        self.prefix = prefix
        self.metrics: list[str] = []
        self.token = TOKEN
        self.client = ApiClient(url, TOKEN)

    def children(self, command: str) -> list[int]:
        """Pids of this system's component processes running `jobpost <command>`."""
        return component_pids(command, self.prefix)

    def board(self, board: str, posting_id: str) -> dict:
        """What the sandbox board holds of the posting (no versions when it never saw it)."""
        response = httpx.get(f"{self.sandbox}/_sandbox/{board}/postings/{posting_id}")
        return response.json() if response.status_code == 200 else {"versions": [], "status": None}


@contextlib.contextmanager
def started_system(
    kafka: KafkaSettings, elasticsearch_url: str, unique: str, **extra: str
) -> Iterator[System]:
    """`jobpost run` against this Kafka (its security settings included), on this test's
    topics and index (plus `extra` settings), once /readyz answers 200; stopped afterwards."""
    # Replica r of the API listens on api_port + r - 1: all of them must be free.
    replicas = int(extra.get("JOBPOST_RUN_REPLICAS", "1"))
    api_port, sandbox_port = free_ports(replicas), free_port()
    # Each replica's LinkedIn, Indeed and indexer consumers and webhooks dispatcher (run.py).
    metrics_port = free_ports(4 * replicas)
    env = {
        **kafka_env(kafka),
        "JOBPOST_API_PORT": str(api_port),
        "JOBPOST_SANDBOX_PORT": str(sandbox_port),
        "JOBPOST_API_TOKENS": TOKEN,
        "JOBPOST_API_ELASTICSEARCH_URL": elasticsearch_url,
        "JOBPOST_INDEXER_ELASTICSEARCH_URL": elasticsearch_url,
        "JOBPOST_API_SEARCH_ALIAS": f"{unique}-postings",
        "JOBPOST_INDEXER_ALIAS": f"{unique}-postings",
        "JOBPOST_CONSUMER_RETRY__FIRST_WAIT_S": "0.5",
        "JOBPOST_CONSUMER_RETRY__MAX_WAIT_S": "2",
        "JOBPOST_CONSUMER_LISTING_POLL_INTERVAL_S": "1",  # the boards' status read back each second
        "JOBPOST_CONSUMER_DELIVER_EVERY_VERSION": "true",  # the journeys count every version at the boards
        "JOBPOST_RUN_SERVERS": "false",  # the test session owns Kafka and Elasticsearch
        "JOBPOST_METRICS_PORT_BASE": str(metrics_port),
        "JOBPOST_RUN_PROMETHEUS": "false",  # 9090 may be a developer's; a test asks for its own
        **extra,
    }
    process = Process("make-run", ["run"], env)
    system = System(
        process, f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{sandbox_port}", kafka.topic_prefix
    )
    system.metrics = [f"http://127.0.0.1:{metrics_port + n}/metrics" for n in range(3)]

    def ready() -> bool:
        assert process.popen.poll() is None, process.log_tail()
        try:
            return httpx.get(f"{system.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(ready, 90, "the whole system to be ready")
        yield system
    finally:
        system.client.close()
        process.stop()


@pytest.fixture
def system(kafka, elasticsearch_url, unique) -> Iterator[System]:
    with started_system(kafka, elasticsearch_url, unique) as started:
        yield started
