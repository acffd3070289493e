"""Session-wide real servers, and per-test isolation: own topic prefix, groups and index."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from confluent_kafka import KafkaException

from runtime.kafka import KafkaSettings
from runtime.topics import delete_topics, ensure_topics
from schemas.topics import Topics
from tests import servers


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests say what they need by where they live: tests/integration/ needs the real
    servers, tests/e2e/ starts the real processes; `pytest tests/unit` (or
    `-m "not integration and not e2e"`) runs only the unit tests."""
    for item in items:
        parts = Path(item.fspath).parts
        if "integration" in parts:
            item.add_marker(pytest.mark.integration)
        elif "e2e" in parts:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True, scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Local stores (runtime.stores) of every component a test starts, in-process or as a
    process, go under a folder of this session, never the project's `.state`; no
    configuration file is read unless a test names one."""
    path = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JOBPOST_STATE_DIR", str(path))
        patch.delenv("JOBPOST_CONFIG_FILE", raising=False)  # a developer's own file stays out
        yield path


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    with servers.kafka_bootstrap() as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def elasticsearch_url() -> Iterator[str]:
    with servers.elasticsearch_url() as url:
        yield url


@pytest.fixture(scope="session")
def schema_registry_url() -> Iterator[str]:
    with servers.schema_registry_url() as url:
        yield url


@pytest.fixture
def unique(request: pytest.FixtureRequest) -> Iterator[str]:
    """A short name no other test uses, for topic prefixes, groups and indices. The test's
    indices are deleted afterwards, so a long-lived search server does not fill up."""
    name = f"t{uuid.uuid4().hex[:10]}"
    yield name
    if "elasticsearch_url" in request.fixturenames:
        url = request.getfixturevalue("elasticsearch_url")
        with contextlib.suppress(httpx.HTTPError):  # best effort: the test's verdict stands
            httpx.delete(f"{url}/{name}-*", params={"allow_no_indices": "true"}, timeout=30)


@pytest.fixture
def kafka(kafka_bootstrap: str, unique: str) -> Iterator[KafkaSettings]:
    """Kafka settings whose topics (all of DESIGN.md's, 3 partitions each) belong to this test."""
    settings = servers.one_broker(kafka_bootstrap, unique, partitions=3)
    ensure_topics(settings)
    yield settings
    with contextlib.suppress(KafkaException):  # best effort: the test's verdict stands
        delete_topics(settings)


@pytest.fixture
def topics(kafka: KafkaSettings) -> Topics:
    return Topics(kafka.topic_prefix)
