from collections.abc import Iterator

import pytest

from tests.processes import ApiProcess

TOKEN = "test-token"


@pytest.fixture
def api(kafka, elasticsearch_url) -> Iterator[ApiProcess]:
    process = ApiProcess(kafka, TOKEN, elasticsearch_url)
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()


@pytest.fixture
def second_api(kafka, elasticsearch_url, api) -> Iterator[ApiProcess]:
    process = ApiProcess(kafka, TOKEN, elasticsearch_url)
    try:
        process.wait_ready()
        yield process
    finally:
        process.stop()
