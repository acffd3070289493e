from collections.abc import Iterator

import pytest

from tests.processes import ApiProcess, running_api

TOKEN = "test-token"


@pytest.fixture
def api(kafka, elasticsearch_url) -> Iterator[ApiProcess]:
    with running_api(kafka, TOKEN, elasticsearch_url) as process:
        yield process


@pytest.fixture
def second_api(kafka, elasticsearch_url, api) -> Iterator[ApiProcess]:
    with running_api(kafka, TOKEN, elasticsearch_url) as process:
        yield process
