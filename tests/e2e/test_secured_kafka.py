"""The whole path through a secured Kafka: a broker of this test's own with a SASL_SSL listener
(SCRAM-SHA-512, its user written by Kafka's `kafka-storage format --add-scram`), its
certificate signed by a CA made here with openssl; every component of `jobpost run` pointed
at that listener only. Kafka answers a client's metadata request with the addresses of the
listener the client asked through, so none of them ever reaches the broker's PLAINTEXT
listener (kept for the broker itself and the stack's readiness probe).

And what an operator sees when the CA or the password is wrong: every command exits 2 at
once, naming the TLS or SASL failure and the setting to check — not a process that hangs
in reconnects and never becomes ready."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jobpost_dev import stack
from jobpost_dev.processes import free_port, wait_until
from jobpost_dev.stack.tls import CertificateAuthority
from runtime.kafka import KafkaSettings
from runtime.topics import ensure_topics
from tests.e2e.conftest import TOKEN, started_system
from tests.e2e.test_journey import progress, titles

pytestmark = pytest.mark.serial  # a broker of its own, and seven processes ready within a bound

USER = "jobpost"
# Each component as `jobpost run` starts it, and `jobpost run` and `jobpost topics` themselves.
COMMANDS = [
    ["api"],
    ["sequencer"],
    ["consumer", "linkedin"],
    ["consumer", "indeed"],
    ["indexer"],
    ["topics"],
    ["run"],
]


@dataclass(frozen=True)
class SecuredKafka:
    kafka: KafkaSettings
    authority: CertificateAuthority
    folder: Path


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredKafka]:
    project = stack.StackSettings()
    stack.KafkaServer(project).fetch()  # the project's jars, fetched once (make test has them)
    folder = tmp_path_factory.mktemp("secured-kafka")
    (folder / "jars").symlink_to(project.dir.resolve() / "jars")
    authority = CertificateAuthority.create(folder / "tls", "jobpost test CA")
    password = secrets.token_urlsafe(18)
    settings = stack.StackSettings(
        dir=folder,
        kafka_port=free_port(),
        kafka_controller_port=free_port(),
        kafka_sasl_ssl_port=free_port(),
        kafka_scram_users={USER: password},
        kafka_heap="384m",
    )
    broker = stack.KafkaServer(settings)
    broker.start()
    try:
        assert broker.sasl_ssl_address is not None
        kafka = KafkaSettings(
            bootstrap_servers=broker.sasl_ssl_address,
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username=USER,
            sasl_password=password,
            config={"ssl.ca.location": str(authority.certificate)},
            topic_prefix=f"s{secrets.token_hex(5)}",
            partitions=3,
            replication_factor=1,  # one broker
            min_insync_replicas=1,
            start_timeout_s=10,
        )
        yield SecuredKafka(kafka, authority, folder)
    finally:
        broker.stop()


def test_create_reaches_both_boards_and_search_over_sasl_ssl(secured: SecuredKafka, elasticsearch_url: str):
    assert len(ensure_topics(secured.kafka)) > 10  # created through the secured listener

    with started_system(secured.kafka, elasticsearch_url, secured.kafka.topic_prefix) as system:
        api = system.client
        posting_id = api.create(title="Security Engineer")["id"]
        api.replace(posting_id, title="Staff Security Engineer")

        for board in ("linkedin", "indeed"):
            wait_until(
                lambda: system.board(board, posting_id)["versions"] == [0, 1], 60, f"{board} to apply 0, 1"
            )
        wait_until(lambda: titles(api, "staff") == [(posting_id, 1)], 60, "search to find version 1")
        # The board shows a LinkedIn version once its task succeeded; the consumer records
        # it delivered when its next poll of the task sees that.
        reported = lambda: {d: p["delivered_version"] for d, p in progress(api, posting_id).items()}  # noqa: E731
        wait_until(lambda: reported() == {"linkedin": 1, "indeed": 1, "search": 1}, 30, "deliveries at 1")


def started_with(kafka: KafkaSettings, command: list[str], folder: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        **kafka.environment(),
        "JOBPOST_API_TOKENS": TOKEN,
        "JOBPOST_API_PORT": str(free_port()),
        "JOBPOST_SANDBOX_PORT": str(free_port()),
        "JOBPOST_RUN_SERVERS": "false",
        "JOBPOST_STACK_DIR": str(folder),
        "JOBPOST_STATE_DIR": str(folder / "state" / "-".join(command)),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "jobpost.cli", *command],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def refusals(kafka: KafkaSettings, folder: Path) -> dict[str, tuple[int, list[str], float]]:
    """Each command's exit status, its `error:` lines and how long it took, run all at once."""
    started = time.monotonic()
    runs = {" ".join(c): started_with(kafka, c, folder) for c in COMMANDS}
    results = {}
    for name, run in runs.items():
        try:
            _, stderr = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            raise AssertionError(f"`jobpost {name}` still running after 60 s") from None
        errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
        results[name] = (run.returncode, errors, time.monotonic() - started)
    return results


def test_a_wrong_ca_fails_every_component_clearly_at_start(secured: SecuredKafka):
    other = CertificateAuthority.create(secured.folder / "other-ca", "a CA that signed nothing here")
    wrong = secured.kafka.model_copy(update={"config": {"ssl.ca.location": str(other.certificate)}})

    for name, (code, errors, seconds) in refusals(wrong, secured.folder).items():
        assert code == 2, (name, errors)
        assert errors[0].startswith(f"error: Kafka at {wrong.bootstrap_servers} (SASL_SSL): "), (name, errors)
        assert "SSL handshake failed" in errors[0] and "certificate verify failed" in errors[0], (
            name,
            errors,
        )
        assert errors[1].startswith("error: check JOBPOST_KAFKA_CONFIG__SSL_CA_LOCATION"), (name, errors)
        assert seconds < 45, (name, seconds)


def test_a_wrong_password_fails_clearly_at_start(secured: SecuredKafka):
    wrong = KafkaSettings(**{**secured.kafka.model_dump(), "sasl_password": "not-the-password"})

    result = started_with(wrong, ["topics"], secured.folder)
    _, stderr = result.communicate(timeout=60)

    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 2, stderr
    assert "Authentication failed" in errors[0] and "SCRAM-SHA-512" in errors[0], errors
    assert errors[1].startswith("error: check JOBPOST_KAFKA_SASL_MECHANISM"), errors
    # ... and the password is in no line it printed.
    assert "not-the-password" not in stderr


def test_a_client_without_tls_gets_nowhere(secured: SecuredKafka):
    """The listener is what it says: a client speaking SASL without TLS to it is not answered."""
    plain = KafkaSettings(
        **{
            **secured.kafka.model_dump(),
            "security_protocol": "SASL_PLAINTEXT",
            "config": {},
            "start_timeout_s": 5,
        }
    )

    result = started_with(plain, ["topics"], secured.folder)
    _, stderr = result.communicate(timeout=60)

    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert result.returncode == 2, stderr
    assert (
        errors[0] == f"error: Kafka at {plain.bootstrap_servers} (SASL_PLAINTEXT) did not answer within 5 s"
    )
