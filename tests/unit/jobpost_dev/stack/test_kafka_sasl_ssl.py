"""The local broker's SASL_SSL listener as configured (its run is tests/e2e/test_secured_kafka.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from jobpost_dev import stack
from jobpost_dev.stack.tls import CertificateAuthority


def secured(tmp_path: Path, **more: object) -> stack.StackSettings:
    given: dict[str, object] = {
        "dir": tmp_path,
        "kafka_port": 19092,
        "kafka_controller_port": 19093,
        "kafka_sasl_ssl_port": 19094,
        "kafka_scram_users": {"jobpost": "s3cret-pw"},
        **more,
    }
    return stack.StackSettings(**given)  # type: ignore[arg-type]


def test_the_listener_its_users_and_its_certificate(tmp_path: Path) -> None:
    authority = CertificateAuthority.create(tmp_path / "tls")
    node = stack.KafkaServer(secured(tmp_path))

    config = node.properties(node.data)

    assert config["listeners"] == (
        "PLAINTEXT://127.0.0.1:19092,SASL_SSL://127.0.0.1:19094,CONTROLLER://127.0.0.1:19093"
    )
    assert config["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092,SASL_SSL://127.0.0.1:19094"
    assert config["listener.name.sasl_ssl.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert node.addresses() == ["127.0.0.1:19092", "127.0.0.1:19094"]
    assert "--add-scram" in node.format_command("id")
    assert "SCRAM-SHA-512=[name=jobpost,password=s3cret-pw]" in node.format_command("id")
    # The keystore's certificate is the CA's, for the addresses clients use.
    keystore = Path(config["listener.name.sasl_ssl.ssl.keystore.location"])
    shown = subprocess.run(
        ["openssl", "pkcs12", "-in", str(keystore), "-nokeys", "-clcerts",
         "-passin", f"pass:{config['listener.name.sasl_ssl.ssl.keystore.password']}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    verified = subprocess.run(
        ["openssl", "verify", "-CAfile", str(authority.certificate)],
        input=shown,
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stderr
    text = subprocess.run(["openssl", "x509", "-noout", "-text"], input=shown, capture_output=True, text=True)
    assert "DNS:localhost, IP Address:127.0.0.1" in text.stdout


def test_a_stack_without_a_ca_makes_one(tmp_path: Path) -> None:
    node = stack.KafkaServer(secured(tmp_path))

    node.properties(node.data)

    assert (tmp_path / "tls" / "ca.pem").is_file() and (tmp_path / "tls" / "kafka.p12").is_file()


def test_without_the_port_nothing_changes(tmp_path: Path) -> None:
    node = stack.KafkaServer(stack.StackSettings(dir=tmp_path, kafka_port=19092, kafka_controller_port=19093))

    config = node.properties(node.data)

    assert "SASL_SSL" not in config["listeners"] and "--add-scram" not in node.format_command("id")
    assert not (tmp_path / "tls").exists()


@pytest.mark.parametrize(
    ("more", "refusal"),
    [
        ({"brokers": 3}, "one broker only"),
        ({"kafka_scram_users": {}}, "needs JOBPOST_STACK_KAFKA_SCRAM_USERS"),
        ({"kafka_scram_users": {"jobpost": "a,b]"}}, "letters, digits"),
        ({"kafka_authorizer": True}, "needs JOBPOST_STACK_KAFKA_SUPER_USERS"),
    ],
)
def test_what_cannot_work_is_refused(tmp_path: Path, more: dict[str, object], refusal: str) -> None:
    with pytest.raises(ValidationError, match=refusal):
        secured(tmp_path, **more)


def test_the_authorizer_allows_nothing_without_an_acl_but_to_its_super_users(tmp_path: Path) -> None:
    node = stack.KafkaServer(secured(tmp_path, kafka_authorizer=True, kafka_super_users=["jobpost"]))

    config = node.properties(node.data)

    assert config["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert config["allow.everyone.if.no.acl.found"] == "false"
    # The broker's own listeners (PLAINTEXT, CONTROLLER) authenticate nobody: ANONYMOUS is the broker.
    assert config["super.users"] == "User:ANONYMOUS;User:jobpost"


def test_the_authorizer_needs_the_secured_listener(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs JOBPOST_STACK_KAFKA_SASL_SSL_PORT"):
        stack.StackSettings(dir=tmp_path, kafka_authorizer=True, kafka_super_users=["admin"])
