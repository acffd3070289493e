from collections.abc import Callable, Iterator

import httpx
import pytest

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
