"""`jobpost run` reads the environment variables docs/configuration.md documents, through one
settings object."""

from __future__ import annotations

import re

import pytest

from jobpost_dev.run import RunSettings, components
from jobpost_dev.run_env import component_env

VARIABLES = (
    "JOBPOST_API_PORT",
    "JOBPOST_SANDBOX_PORT",
    "JOBPOST_RUN_SERVERS",
    "JOBPOST_RUN_REPLICAS",
    "JOBPOST_METRICS_PORT_BASE",
    "JOBPOST_API_TOKENS",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_defaults() -> None:
    settings = RunSettings()

    assert (settings.api_port, settings.sandbox_port, settings.metrics_port_base) == (8000, 8090, 9101)
    assert settings.servers is True
    assert settings.replicas == 1
    assert settings.api_tokens is None
    assert len(settings.token()) > 20


def test_reads_the_documented_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in zip(
        VARIABLES, ("18000", "18090", "false", "2", "19101", "secret-a,secret-b"), strict=True
    ):
        monkeypatch.setenv(name, value)

    settings = RunSettings()

    assert (settings.api_port, settings.sandbox_port, settings.metrics_port_base) == (18000, 18090, 19101)
    assert settings.servers is False
    assert settings.replicas == 2
    assert settings.token() == "secret-a,secret-b"
    assert "secret-a" not in repr(settings)


def test_an_empty_token_variable_means_make_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_API_TOKENS", "")

    made, again = RunSettings().token(), RunSettings().token()
    assert made != again  # a fresh one for each run, never a fixed default
    assert len(made) >= 32 and re.fullmatch(r"[A-Za-z0-9_-]+", made)  # 24 random bytes, URL-safe


def test_components_listen_where_the_settings_say() -> None:
    settings = RunSettings(api_port=18000, sandbox_port=18090, metrics_port_base=19101)

    addresses = {c.name: c.address for c in components(settings)}
    env = component_env("t", settings)

    assert addresses["sandbox"] == "http://127.0.0.1:18090"
    assert addresses["api"].startswith("http://127.0.0.1:18000")
    assert addresses["indexer"] == "metrics http://127.0.0.1:19103/metrics"
    assert env["JOBPOST_API_TOKENS"] == "t"


def test_make_run_gives_the_consumers_the_sandboxs_token_endpoints_and_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for board in ("LINKEDIN", "INDEED"):
        for name in ("BASE_URL", "TOKEN_URL", "CLIENT_ID", "CLIENT_SECRET"):
            monkeypatch.delenv(f"JOBPOST_CONSUMER_{board}__{name}", raising=False)
    env = component_env("t", RunSettings(sandbox_port=18090))

    assert (
        env["JOBPOST_CONSUMER_LINKEDIN__TOKEN_URL"] == "http://127.0.0.1:18090/linkedin/oauth/v2/accessToken"
    )
    assert env["JOBPOST_CONSUMER_INDEED__TOKEN_URL"] == "http://127.0.0.1:18090/indeed/oauth/v2/tokens"
    assert env["JOBPOST_CONSUMER_INDEED__CLIENT_ID"] == "jobpost-sandbox"
    assert env["JOBPOST_API_SANDBOX_URL"] == "http://127.0.0.1:18090"


def test_a_real_board_set_by_the_caller_keeps_the_callers_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBPOST_CONSUMER_LINKEDIN__BASE_URL", "https://api.linkedin.com")
    monkeypatch.delenv("JOBPOST_CONSUMER_LINKEDIN__CLIENT_ID", raising=False)
    monkeypatch.delenv("JOBPOST_API_SANDBOX_URL", raising=False)
    env = component_env("t", RunSettings(sandbox_port=18090))

    assert "JOBPOST_CONSUMER_LINKEDIN__CLIENT_ID" not in env
    assert env["JOBPOST_CONSUMER_INDEED__BASE_URL"] == "http://127.0.0.1:18090/indeed"
    assert "JOBPOST_API_SANDBOX_URL" not in env


REGISTRIES = (
    "JOBPOST_API_EMPLOYERS_FILE",
    "JOBPOST_CONSUMER_LINKEDIN__EMPLOYERS_FILE",
    "JOBPOST_CONSUMER_INDEED__EMPLOYERS_FILE",
)


@pytest.mark.parametrize("named_by", REGISTRIES)
def test_the_api_and_both_consumers_get_the_one_employer_registry_any_of_them_names(
    monkeypatch: pytest.MonkeyPatch, named_by: str
) -> None:
    for name in REGISTRIES:
        monkeypatch.delenv(name, raising=False)
    assert not any(name in component_env("t", RunSettings()) for name in REGISTRIES)  # the built-in one

    monkeypatch.setenv(named_by, "/etc/jobpost/employers.json")
    env = component_env("t", RunSettings())
    assert [env[name] for name in REGISTRIES] == ["/etc/jobpost/employers.json"] * 3
