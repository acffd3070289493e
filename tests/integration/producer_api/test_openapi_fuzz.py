"""Property-based requests generated from the served OpenAPI description: never a 5xx,
and every error is problem+json."""

import uuid

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings

from schemas.kafka import KafkaSettings
from schemas.topics import ensure_topics
from tests.processes import ApiProcess

TOKEN = "fuzz-token"


@pytest.fixture(scope="module")
def fuzzed_api(kafka_bootstrap, elasticsearch_url):
    kafka = KafkaSettings(
        bootstrap_servers=kafka_bootstrap, topic_prefix=f"fz{uuid.uuid4().hex[:8]}", partitions=3
    )
    ensure_topics(kafka)
    process = ApiProcess(kafka, TOKEN, elasticsearch_url)
    try:
        process.wait_ready()
        # A few real postings, so generated ids sometimes hit one.
        for title in ("Kafka Engineer", "Barista"):
            httpx.post(
                f"{process.url}/postings", json={"title": title, "description": ""}, headers=process.headers
            )
        yield process
    finally:
        process.stop()


def test_generated_requests_never_get_a_server_error(fuzzed_api):
    schema = schemathesis.openapi.from_url(f"{fuzzed_api.url}/openapi.json")
    calls = []

    @given(case=schema.as_strategy())
    @settings(
        max_examples=300,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.explicit, Phase.generate],  # report the failing request, don't spend minutes shrinking
    )
    def check(case):
        response = case.call(base_url=fuzzed_api.url, headers=fuzzed_api.headers, timeout=30)
        calls.append((case.method, response.status_code))
        assert response.status_code < 500, f"{case.method} {case.formatted_path} -> {response.status_code}"
        if response.status_code >= 400:
            assert response.headers["content-type"] == ["application/problem+json"]

    check()
    methods = {method for method, _ in calls}
    assert {"GET", "POST", "PUT", "DELETE"} <= methods
