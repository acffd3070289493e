"""One configuration file for every component: a value given in code wins over the
environment, the environment over the file, the file over the default, at every depth."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from consumers.config import ConsumerSettings
from producer_api.config import ApiSettings
from runtime.kafka import KafkaSettings
from runtime.settings_file import ConfigFileError, table_of
from search_indexer.config import IndexerSettings
from sequencer.config import SequencerSettings

FILE = """
[kafka]
bootstrap_servers = "file-broker:9092"
partitions = 3
topic_prefix = "from-file"

[api]
port = 9000
rate_limit = "5/second"

[api.oidc]
issuer = "https://issuer.example"

[api.elasticsearch]
url = "https://api-search.example:9200"

[indexer.elasticsearch]
url = "https://indexer-search.example:9200"

[consumer]
max_in_flight = 7

[consumer.linkedin]
base_url = "https://linkedin.example"
timeout_s = 9.5

[consumer.retry]
max_attempts = 11
"""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith("JOBPOST_")]:
        monkeypatch.delenv(name)


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "jobpost.toml"
    path.write_text(FILE)
    monkeypatch.setenv("JOBPOST_CONFIG_FILE", str(path))
    return path


@pytest.mark.usefixtures("config_file")
def test_the_file_sets_what_no_variable_sets() -> None:
    kafka = KafkaSettings()

    assert (kafka.bootstrap_servers, kafka.partitions, kafka.security_protocol) == (
        "file-broker:9092",
        3,
        "PLAINTEXT",  # neither in the file nor in the environment: the default
    )


@pytest.mark.usefixtures("config_file")
def test_a_variable_wins_over_the_file_and_a_value_in_code_over_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_PARTITIONS", "4")
    monkeypatch.setenv("JOBPOST_API_PORT", "9100")

    assert KafkaSettings().partitions == 4
    assert KafkaSettings(partitions=5).partitions == 5
    assert ApiSettings().port == 9100
    assert ApiSettings(port=9200).port == 9200
    assert ApiSettings().rate_limit == "5/second"  # the file's, where no variable says otherwise


@pytest.mark.usefixtures("config_file")
def test_every_component_reads_the_one_kafka_table_and_its_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_TOPIC_PREFIX", "from-env")

    for settings in (ApiSettings(), SequencerSettings(), ConsumerSettings(), IndexerSettings()):
        assert (settings.kafka.bootstrap_servers, settings.kafka.topic_prefix) == (
            "file-broker:9092",
            "from-env",
        )


@pytest.mark.usefixtures("config_file")
def test_a_components_own_tables_are_read_and_overridden_by_their_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBPOST_API_OIDC_AUDIENCE", "jobpost")
    monkeypatch.setenv("JOBPOST_INDEXER_ELASTICSEARCH_URL", "https://env-search.example:9200")

    api, indexer = ApiSettings(), IndexerSettings()

    assert (api.oidc.issuer, api.oidc.audience) == ("https://issuer.example", "jobpost")
    assert api.elasticsearch.url == "https://api-search.example:9200"
    assert indexer.elasticsearch.url == "https://env-search.example:9200"


@pytest.mark.usefixtures("config_file")
def test_a_nested_variable_overrides_one_key_of_a_table_and_keeps_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBPOST_CONSUMER_LINKEDIN__TIMEOUT_S", "2")

    consumer = ConsumerSettings()

    assert (consumer.linkedin.base_url, consumer.linkedin.timeout_s) == ("https://linkedin.example", 2.0)
    assert (consumer.max_in_flight, consumer.retry.max_attempts) == (7, 11)
    assert consumer.indeed.base_url == "http://127.0.0.1:8090/indeed"  # untouched: the default


def test_without_the_variable_no_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "jobpost.toml").write_text(FILE)
    monkeypatch.chdir(tmp_path)

    assert KafkaSettings().bootstrap_servers == "127.0.0.1:9092"


def test_a_file_named_and_missing_is_an_error_not_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBPOST_CONFIG_FILE", str(tmp_path / "absent.toml"))

    with pytest.raises(ConfigFileError, match=r"absent\.toml"):
        KafkaSettings()


def test_a_file_that_is_not_toml_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "jobpost.toml"
    path.write_text("[kafka\nbootstrap_servers = 1\n")
    monkeypatch.setenv("JOBPOST_CONFIG_FILE", str(path))

    with pytest.raises(ConfigFileError, match="not TOML"):
        KafkaSettings()


def test_a_misspelt_key_of_a_settings_table_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "jobpost.toml"
    path.write_text("[api]\nprot = 9000\n")
    monkeypatch.setenv("JOBPOST_CONFIG_FILE", str(path))

    with pytest.raises(ValidationError) as refused:
        ApiSettings()

    assert [error["loc"] for error in refused.value.errors()] == [("prot",)]


@pytest.mark.parametrize(
    ("prefix", "table"),
    [
        ("JOBPOST_KAFKA_", "kafka"),
        ("JOBPOST_SCHEMA_REGISTRY_", "schema_registry"),
        ("JOBPOST_API_", "api"),
        ("JOBPOST_API_OIDC_", "api.oidc"),
        ("jobpost_indexer_elasticsearch_", "indexer.elasticsearch"),
    ],
)
def test_a_table_is_named_after_its_variables_prefix(prefix: str, table: str) -> None:
    assert table_of(prefix) == table
