"""Kafka settings as an operator gives them: any librdkafka property passed through, secrets
kept secret, the typed settings still working, replication of a cluster by default."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from runtime import kafka_properties
from runtime.kafka import KafkaSettings

PREFIX = "JOBPOST_KAFKA_"

# From librdkafka's CONFIGURATION.md: every property with an underscore in its name that a
# string can set, and dotted ones an operator of a secured cluster needs.
PROPERTIES = [
    "log_level",
    "enabled_events",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "sasl.oauthbearer.method",
    "sasl.oauthbearer.client.id",
    "sasl.oauthbearer.client.secret",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.oauthbearer.scope",
    "sasl.kerberos.service.name",
    "client.id",
    "socket.keepalive.enable",
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if n.startswith(PREFIX)]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize("name", PROPERTIES)
def test_every_property_can_be_written_as_a_variable(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    variable = f"{PREFIX}CONFIG__{kafka_properties.environment_key(name)}"
    monkeypatch.setenv(variable, "value")

    assert KafkaSettings().client_config()[name] == "value"


def test_the_readme_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG__SSL_CA_LOCATION", "/etc/kafka/ca.pem")
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG__LOG__LEVEL", "7")
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG__SASL_OAUTHBEARER_CLIENT_ID", "jobpost")

    config = KafkaSettings().client_config()

    assert (config["ssl.ca.location"], config["log_level"], config["sasl.oauthbearer.client.id"]) == (
        "/etc/kafka/ca.pem",
        "7",
        "jobpost",
    )


def test_a_properties_file_is_read_and_the_variables_win(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    file = tmp_path / "client.properties"
    file.write_text(
        "# handed out by the Kafka team\n"
        "bootstrap.servers=kafka-1.internal:9093,kafka-2.internal:9093\n"
        "security.protocol = SASL_SSL\n"
        "sasl.mechanisms: SCRAM-SHA-512\n"
        "sasl.username jobpost\n"
        "sasl.password=p\\u00e4ss\\=word\n"
        "ssl.ca.location=/etc/kafka/\\\n"
        "    ca.pem\n"
        "! a comment too\n"
        "client.id=from-the-file\n"
    )
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG_FILE", str(file))
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG__CLIENT_ID", "from-the-environment")

    settings = KafkaSettings()
    config = settings.client_config()

    assert settings.bootstrap_servers == "kafka-1.internal:9093,kafka-2.internal:9093"
    assert (settings.security_protocol, settings.sasl_mechanism, settings.sasl_username) == (
        "SASL_SSL",
        "SCRAM-SHA-512",
        "jobpost",
    )
    assert config["sasl.password"] == "päss=word"
    assert config["ssl.ca.location"] == "/etc/kafka/ca.pem"
    assert config["client.id"] == "from-the-environment"


def test_the_typed_settings_keep_working(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("JOBPOST_KAFKA_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("JOBPOST_KAFKA_SASL_USERNAME", "jobpost")
    monkeypatch.setenv("JOBPOST_KAFKA_SASL_PASSWORD", "hunter2")

    config = KafkaSettings().client_config()

    assert {
        k: config[k] for k in ("security.protocol", "sasl.mechanism", "sasl.username", "sasl.password")
    } == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "jobpost",
        "sasl.password": "hunter2",
    }


def test_a_setting_given_twice_differently_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG__SECURITY_PROTOCOL", "SASL_SSL")

    with pytest.raises(ValidationError, match=r"security\.protocol is set twice"):
        KafkaSettings()


@pytest.mark.parametrize("name", ["acks", "isolation.level", "partitioner", "group.id", "enable.auto.commit"])
def test_what_the_design_fixes_cannot_be_overridden(name: str) -> None:
    with pytest.raises(ValidationError, match=f"{re.escape(name)} is not a setting to pass through"):
        KafkaSettings(config={name: "x"})


SECRETS = {
    "JOBPOST_KAFKA_SASL_PASSWORD": "secret-sasl-password",
    "JOBPOST_KAFKA_CONFIG__SSL_KEY_PASSWORD": "secret-key-password",
    "JOBPOST_KAFKA_CONFIG__SASL_OAUTHBEARER_CLIENT_SECRET": "secret-client-secret",
    "JOBPOST_KAFKA_CONFIG__SSL_KEYSTORE_PASSWORD": "secret-keystore-password",
}


def test_secrets_are_never_shown(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    settings = KafkaSettings()
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("jobpost.test").info("starting with %s", settings)

    shown = [
        repr(settings),
        str(settings),
        settings.model_dump_json(),
        json.dumps(settings.model_dump(), default=str),
    ]
    shown.append(caplog.text)
    for value in SECRETS.values():
        assert not any(value in text for text in shown), value
    # ... and librdkafka gets every one of them.
    assert set(SECRETS.values()) <= set(settings.client_config().values())


def test_a_refused_setting_does_not_quote_a_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_KAFKA_SASL_PASSWORD", "secret-sasl-password")
    monkeypatch.setenv("JOBPOST_KAFKA_CONFIG__ACKS", "1")

    with pytest.raises(ValidationError) as refused:
        KafkaSettings()

    assert "secret-sasl-password" not in str(refused.value)


def test_a_cluster_is_assumed_unless_told_otherwise() -> None:
    settings = KafkaSettings()

    assert (settings.replication_factor, settings.min_insync_replicas) == (3, 2)


def test_more_in_sync_replicas_than_replicas_is_refused() -> None:
    with pytest.raises(ValidationError, match="every write would be refused"):
        KafkaSettings(replication_factor=1, min_insync_replicas=2)


def test_a_child_process_gets_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = KafkaSettings(
        bootstrap_servers="127.0.0.1:19093",
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="jobpost",
        sasl_password="pw",
        config={"ssl.ca.location": "/tmp/ca.pem", "log_level": "3", "ssl.key.password": "k"},
        topic_prefix="t1",
        replication_factor=1,
        min_insync_replicas=1,
    )
    for name, value in settings.environment().items():
        monkeypatch.setenv(name, value)

    again = KafkaSettings()

    assert again.client_config() == settings.client_config()
    assert (again.topic_prefix, again.replication_factor, again.min_insync_replicas) == ("t1", 1, 1)


def test_the_properties_format() -> None:
    assert kafka_properties.property_name("SSL_CA_LOCATION") == "ssl.ca.location"
    assert kafka_properties.property_name("log__level") == "log_level"
    # given in code by its own name, an underscored property stays what it is
    assert kafka_properties.property_name("log_level") == "log_level"
    assert KafkaSettings(config={"log_level": "0"}).client_config()["log_level"] == "0"
    assert kafka_properties.property_name("sasl.oauthbearer.client.id") == "sasl.oauthbearer.client.id"
    for name in PROPERTIES:
        assert kafka_properties.property_name(kafka_properties.environment_key(name)) == name


def test_java_properties_escapes(tmp_path: Path) -> None:
    file = tmp_path / "x.properties"
    file.write_text("a\\ key = tab\\there\nempty=\nline\\\\=ends with a backslash\\\\\n  spaced   value  \n")

    assert kafka_properties.read_properties(file) == {
        "a key": "tab\there",
        "empty": "",
        "line\\": "ends with a backslash\\",
        "spaced": "value  ",
    }
