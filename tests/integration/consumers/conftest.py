import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from schemas import codec
from schemas.model import Op, PostingUpdate
from schemas.topics import Component, Topics
from tests import postings
from tests.processes import ApiProcess, Process, free_port, kafka_env, running_api, wait_until

TOKEN = "delivery-token"


class Sandbox:
    def __init__(self, process: Process, url: str) -> None:
        self.process = process
        self.url = url

    def faults(self, board: str, mode: str, **options) -> None:
        response = httpx.put(f"{self.url}/_sandbox/{board}/faults", json={"mode": mode, **options})
        assert response.status_code == 200, response.text

    def posting(self, board: str, posting_id: str) -> dict | None:
        response = httpx.get(f"{self.url}/_sandbox/{board}/postings/{posting_id}")
        return response.json() if response.status_code == 200 else None

    def limits(self, board: str, **limits: object) -> dict:
        response = httpx.put(f"{self.url}/_sandbox/{board}/limits", json=limits)
        assert response.status_code == 200, response.text
        return response.json()

    def stats(self, board: str) -> dict:
        response = httpx.get(f"{self.url}/_sandbox/{board}/stats")
        assert response.status_code == 200, response.text
        return response.json()

    def jobs(self, board: str) -> list[dict]:
        """Every job the board holds (`GET /_sandbox/{board}/jobs`)."""
        response = httpx.get(f"{self.url}/_sandbox/{board}/jobs", timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["jobs"]

    def applied(self, board: str, posting_id: str) -> list[int]:
        seen = self.posting(board, posting_id)
        return seen["versions"] if seen else []


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    port = free_port()
    process = Process("sandbox", ["sandbox", "--port", str(port)], {})
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            return httpx.delete(f"{url}/_sandbox").status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(answers, 30, "the sandbox")
    yield Sandbox(process, url)
    process.stop()


@pytest.fixture
def consumer_env(kafka, sandbox) -> Callable[[str], dict[str, str]]:
    def env(destination: str) -> dict[str, str]:
        return {
            **kafka_env(kafka),
            "JOBPOST_CONSUMER_LINKEDIN__BASE_URL": f"{sandbox.url}/linkedin",
            "JOBPOST_CONSUMER_INDEED__BASE_URL": f"{sandbox.url}/indeed",
            "JOBPOST_CONSUMER_LINKEDIN__TIMEOUT_S": "1",
            "JOBPOST_CONSUMER_INDEED__TIMEOUT_S": "1",
            "JOBPOST_CONSUMER_RETRY__FIRST_WAIT_S": "0.2",
            "JOBPOST_CONSUMER_RETRY__MAX_WAIT_S": "1",
            "JOBPOST_CONSUMER_RETRY__MAX_ATTEMPTS": "100",
            "JOBPOST_CONSUMER_RETRY__MAX_ELAPSED_S": "600",
            "JOBPOST_CONSUMER_COMMIT_INTERVAL_S": "0.2",
            "JOBPOST_CONSUMER_TASK_POLL_INTERVAL_S": "0.5",
            "JOBPOST_CONSUMER_CIRCUIT__PROBE_MAX_WAIT_S": "5",
            # These tests count every version at the board; test_conflation turns it off.
            "JOBPOST_CONSUMER_DELIVER_EVERY_VERSION": "true",
        }

    return env


@pytest.fixture
def start_consumer(consumer_env) -> Iterator[Callable[..., Process]]:
    started: list[Process] = []

    def start(destination: str, **extra: str) -> Process:
        process = Process(
            f"consumer-{destination}", ["consumer", destination], {**consumer_env(destination), **extra}
        )
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.fixture
def api(kafka, elasticsearch_url) -> Iterator[ApiProcess]:
    with running_api(kafka, TOKEN, elasticsearch_url) as process:
        yield process


class Versions:
    """Writes postings' versions straight to `jobpost.postings`, as the sequencer would
    (keyed by posting id, versions from 0 up), for tests of the consumers alone."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self.topic = Topics(kafka.topic_prefix).postings
        self.producer = KafkaClients(kafka).producer()
        self.written: dict[str, int] = {}  # posting -> its newest version

    def write(self, posting_ids: list[str], op: Op | None = None) -> None:
        """The next version of each posting (version 0 for a new one)."""
        now = time.time_ns() // 1_000_000
        for posting_id in posting_ids:
            version = self.written.get(posting_id, -1) + 1
            self.written[posting_id] = version
            kind = op or (Op.CREATED if version == 0 else Op.UPDATED)
            update = PostingUpdate(
                posting_id,
                version,
                kind,
                f"{posting_id}:{version}",
                f"r-{posting_id}-{version}",
                postings.posting(version, title=f"Role {posting_id} v{version}", notes=""),
                now,
                now,
            )
            self.producer.produce(self.topic, key=posting_id, value=codec.posting_updates().encode(update))
            self.producer.poll(0)
        assert self.producer.flush(30) == 0

    def everything(self) -> dict[str, list[int]]:
        return {p: list(range(v + 1)) for p, v in self.written.items()}


@pytest.fixture
def versions(kafka) -> Versions:
    return Versions(kafka)


def dead_letters(kafka: KafkaSettings, topic: str) -> list[dict]:
    found: list[dict] = []

    def take(message) -> None:
        headers = {k: v.decode() for k, v in message.headers() or []}
        found.append({"key": message.key(), "value": message.value(), "headers": headers})

    replay(kafka, topic, range(kafka.partitions), take)
    return found


class BoardDelivery:
    """One posting's delivery to one board as the API shows it (`/postings/{id}/deliveries`)."""

    def __init__(self, http: httpx.Client, posting_id: str, board: str) -> None:
        self.http = http
        self.posting_id = posting_id
        self.board = board

    def __call__(self) -> dict:
        response = self.http.get(f"/postings/{self.posting_id}/deliveries")
        assert response.status_code == 200, response.text
        return response.json()["destinations"][self.board]

    def refused(self, kafka: KafkaSettings) -> dict:
        """Waits for the board's dead letter, then for the API to say the version failed (the
        consumer writes the letter before the posting's state, and the API's view follows)."""
        dlq = Topics(kafka.topic_prefix).dlq(Component(self.board))
        wait_until(lambda: dead_letters(kafka, dlq), 60, f"{self.board}'s dead letter")
        wait_until(lambda: self()["status"] == "failed", 30, f"the version said failed at {self.board}")
        return self()

    def live(self, version: int) -> bool:
        """`version` delivered, and the board says its job is live."""
        seen = self()
        listing = seen["listing"] or {}
        shown = (seen["status"], seen["delivered_version"], listing.get("status"))
        return shown == ("delivered", version, "live")


def metric(port: int, name: str, labels: str = "") -> float | None:
    """One sample of a consumer's /metrics (`labels` as Prometheus prints them)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(f"{name}{{{labels}}} ") or (not labels and line.startswith(f"{name} ")):
            return float(line.rsplit(" ", 1)[1])
    return None


def state_history(kafka: KafkaSettings, destination: str) -> dict[str, list]:
    """Every DeliveryState written for the destination, per posting, in order."""
    from runtime import records

    found: dict[str, list] = {}

    def take(message) -> None:
        board, posting_id, state = records.delivery_state(message)
        if board.value == destination and state is not None:
            found.setdefault(posting_id, []).append(state)

    replay(kafka, Topics(kafka.topic_prefix).deliveries, range(kafka.partitions), take)
    return found


def delivery_events(kafka: KafkaSettings) -> list:
    from runtime import records

    found: list = []
    replay(
        kafka,
        Topics(kafka.topic_prefix).delivery_events,
        range(kafka.partitions),
        lambda m: found.append(records.delivery_event(m)),
    )
    return found
