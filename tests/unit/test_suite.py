"""make test's two parts (tests/suite.py): both run against the servers it opened once, and
the run fails when either part fails."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from tests import servers, suite


@pytest.fixture
def parts(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, str]]]:
    """The pytest commands the suite runs, with their environment, instead of running them;
    servers at made-up addresses, opened and closed in order."""
    called: list[tuple[list[str], dict[str, str]]] = []
    monkeypatch.setattr(suite.subprocess, "call", lambda command, env: called.append((command, env)) or 0)
    for name, address in (
        ("kafka_bootstrap", "kafka.test:9092"),
        ("elasticsearch_url", "http://search.test:9200"),
        ("schema_registry_url", "http://registry.test:8081"),
    ):
        monkeypatch.setattr(servers, name, _opened(address))
    return called


def _opened(address: str):  # type: ignore[no-untyped-def]
    @contextlib.contextmanager
    def server() -> Iterator[str]:
        yield address

    return server


def test_both_parts_use_the_servers_opened_once_and_the_serial_tests_run_alone(parts) -> None:
    assert suite.main(["-x"]) == 0

    (parallel, parallel_env), (alone, alone_env) = parts
    assert parallel[-7:] == ["-x", "-m", "not serial", "-n", "2", "--dist", "loadfile"]
    assert alone[-5:] == ["-x", "-m", "serial", "-p", "no:xdist"]
    for env in (parallel_env, alone_env):
        assert env["KAFKA_BOOTSTRAP_SERVERS"] == "kafka.test:9092"
        assert env["ELASTICSEARCH_URL"] == "http://search.test:9200"
        assert env["SCHEMA_REGISTRY_URL"] == "http://registry.test:8081"


@pytest.mark.parametrize(
    ("codes", "verdict"),
    [
        ((1, 0), 1),  # a failure in the parallel part is not hidden by a green serial part
        ((0, 2), 2),  # nor one in the serial part
        ((0, suite.NO_TESTS), 0),  # a selection (-k) that leaves the serial part empty
        ((suite.NO_TESTS, 0), 0),
    ],
)
def test_the_run_fails_when_either_part_fails(
    parts, monkeypatch: pytest.MonkeyPatch, codes: tuple[int, int], verdict: int
) -> None:
    answers = iter(codes)
    monkeypatch.setattr(suite.subprocess, "call", lambda command, env: next(answers))

    assert suite.main([]) == verdict
