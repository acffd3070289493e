"""Kafka principals and ACLs on a broker of this test's own: SASL_SSL (SCRAM-SHA-512) with
KRaft's StandardAuthorizer on and nothing allowed without an ACL. Only the admin user is
made by the harness (a super user); `jobpost acls --apply` (the product's command) creates
every component's SCRAM user and ACLs from the table of `runtime.acls`.

Then each component runs as its own process under its own principal (the sequencer apart
from the API, so each has its own) and a posting written through the API reaches both
sandbox boards and the search index, and the webhooks dispatcher signs its event to the
employer's endpoint; and the principals are held to their rows: the
indexer cannot write postings, the API (and a board consumer, for a redrive it refused)
appends to the audit trail but can neither read, delete nor shorten it, no other component
can write it, and a board consumer's credentials cannot ask for a redrive."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from jobpost_dev import stack
from jobpost_dev.processes import Process, answers, free_port, wait_until
from jobpost_dev.run import RunSettings
from jobpost_dev.run_env import component_env, webhooks_env
from jobpost_dev.stack.tls import CertificateAuthority
from runtime.acls import Role
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.topics import ensure_topics
from schemas.enums import Destination
from schemas.topics import Component, ReaderGroup, Topics
from tests import postings
from tests.client import ApiClient
from tests.e2e.test_journey import progress, titles
from tests.integration.webhooks.receiver import Receiver

ADMIN = "admin"
TOKEN = "acls-token"
DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED


@dataclass(frozen=True)
class GuardedKafka:
    admin: KafkaSettings
    passwords: dict[Role, str]
    folder: Path

    @property
    def topics(self) -> Topics:
        return Topics(self.admin.topic_prefix)

    def as_role(self, role: Role) -> KafkaSettings:
        """The admin's settings with the role's user and password instead."""
        user = f"{self.admin.topic_prefix}-{role.value}"
        return KafkaSettings(
            **{**self.admin.model_dump(), "sasl_username": user, "sasl_password": self.passwords[role]}
        )


def acls_command(kafka: KafkaSettings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jobpost.cli", "acls", *args],
        env={**os.environ, **kafka.environment()},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GuardedKafka]:
    project = stack.StackSettings()
    stack.KafkaServer(project).fetch()  # the project's jars, fetched once (make test has them)
    folder = tmp_path_factory.mktemp("acl-kafka")
    (folder / "jars").symlink_to(project.dir.resolve() / "jars")
    authority = CertificateAuthority.create(folder / "tls", "jobpost ACL test CA")
    admin_password = secrets.token_urlsafe(18)
    settings = stack.StackSettings(
        dir=folder,
        kafka_port=free_port(),
        kafka_controller_port=free_port(),
        kafka_sasl_ssl_port=free_port(),
        kafka_scram_users={ADMIN: admin_password},
        kafka_authorizer=True,
        kafka_super_users=[ADMIN],
        kafka_heap="384m",
    )
    broker = stack.KafkaServer(settings)
    broker.start()
    try:
        assert broker.sasl_ssl_address is not None
        admin = KafkaSettings(
            bootstrap_servers=broker.sasl_ssl_address,
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username=ADMIN,
            sasl_password=admin_password,
            config={"ssl.ca.location": str(authority.certificate)},
            topic_prefix=f"a{secrets.token_hex(5)}",
            partitions=3,
            replication_factor=1,  # one broker
            min_insync_replicas=1,
            start_timeout_s=10,
        )
        ensure_topics(admin)
        passwords = {role: secrets.token_urlsafe(18) for role in Role}
        password_file = folder / "passwords.json"
        password_file.write_text(json.dumps({role.value: p for role, p in passwords.items()}))
        applied = acls_command(admin, "--apply", "--passwords", str(password_file))
        assert applied.returncode == 0, applied.stderr
        assert "0 already there" in applied.stdout, applied.stdout
        yield GuardedKafka(admin, passwords, folder)
    finally:
        broker.stop()


def produced(kafka: KafkaSettings, topic: str) -> KafkaError | None:
    """What Kafka answered to one record written to `topic` with these settings."""
    producer = KafkaClients(kafka).producer(give_up_after_ms=20_000)
    outcome: list[KafkaError | None] = []
    producer.produce(topic, b"a record", b"key", on_delivery=lambda error, _message: outcome.append(error))
    assert producer.flush(30) == 0, f"no answer for {topic}"
    return outcome[0]


def read_error(kafka: KafkaSettings, topic: str) -> KafkaError | None:
    """The error reading `topic` from its start meets (None: a record or its end came)."""
    topics = Topics(kafka.topic_prefix)
    reader = KafkaClients(kafka).reader(topics.reader_group(ReaderGroup.REPLAY), ends=True)
    try:
        reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(kafka.partitions)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = reader.poll(0.5)  # a Message is falsy when its value is empty: compare
            if message is None:
                continue
            error = message.error()
            return None if error is None or error.code() == KafkaError._PARTITION_EOF else error
        raise AssertionError(f"no answer reading {topic} within 30 s")
    finally:
        reader.close()


def refusal(futures: Mapping[Any, Future[Any]]) -> int | None:
    """The error code an admin request's one future ends with (None: it was done)."""
    (future,) = futures.values()
    try:
        future.result(30)
    except KafkaException as exc:
        return int(exc.args[0].code())
    return None


def code(error: KafkaError | None) -> int | None:
    return None if error is None else error.code()


def test_applying_the_table_again_changes_nothing(guarded: GuardedKafka):
    again = acls_command(guarded.admin, "--apply")

    assert again.returncode == 0, again.stderr
    assert "ACL bindings: 0 created," in again.stdout, again.stdout
    assert "not in the table" not in again.stdout


def test_every_component_works_under_its_own_principal(guarded: GuardedKafka, elasticsearch_url: str):
    index = f"{guarded.admin.topic_prefix}-postings"
    sandbox_port, api_port = free_port(), free_port()
    base = component_env(TOKEN, RunSettings(sandbox_port=sandbox_port))
    base |= webhooks_env(guarded.folder, base)

    def start(name: str, command: list[str], role: Role | None, **env: str) -> Process:
        kafka = guarded.as_role(role).environment() if role else {}
        return Process(f"acl-{name}", command, {**base, **kafka, **env})

    started = [start("sandbox", ["sandbox", "--port", str(sandbox_port)], None)]
    try:
        wait_until(lambda: answers(f"http://127.0.0.1:{sandbox_port}/docs"), 60, "the sandbox")
        started += [
            start("sequencer", ["sequencer"], Role.SEQUENCER),
            start(
                "api",
                ["api"],
                Role.API,
                JOBPOST_API_PORT=str(api_port),
                JOBPOST_API_EMBEDDED_SEQUENCER="false",
                JOBPOST_API_ELASTICSEARCH_URL=elasticsearch_url,
                JOBPOST_API_SEARCH_ALIAS=index,
            ),
            *(
                start(board, ["consumer", board], Role(board), JOBPOST_CONSUMER_RETRY__FIRST_WAIT_S="0.5")
                for board in ("linkedin", "indeed")
            ),
            start(
                "indexer",
                ["indexer"],
                Role.INDEXER,
                JOBPOST_INDEXER_ELASTICSEARCH_URL=elasticsearch_url,
                JOBPOST_INDEXER_ALIAS=index,
            ),
            start("webhooks", ["webhooks"], Role.WEBHOOKS, JOBPOST_WEBHOOKS_METRICS_PORT=str(free_port())),
        ]

        def ready() -> bool:
            for process in started:
                assert process.popen.poll() is None, f"{process.name} exited:\n{process.log_tail()}"
            try:
                return httpx.get(f"http://127.0.0.1:{api_port}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_until(ready, 120, "every component to be ready")
        api = ApiClient(f"http://127.0.0.1:{api_port}", TOKEN)
        receiver = Receiver().start()
        try:
            chosen = {"url": receiver.url, "events": ["posting.accepted"]}
            receiver.secrets.append(api.request("POST", "/webhooks", json=chosen, expect=201)["secret"])
            posting_id = api.create(**postings.body(3))["id"]
            title = postings.body(3)["title"]

            for board in ("linkedin", "indeed"):
                wait_until(
                    lambda: _board(sandbox_port, board, posting_id) == [0], 60, f"{board} to hold version 0"
                )
            wait_until(lambda: titles(api, title) == [(posting_id, 0)], 60, "search to find version 0")
            reported = lambda: {d: p["delivered_version"] for d, p in progress(api, posting_id).items()}  # noqa: E731
            wait_until(lambda: reported() == {"linkedin": 0, "indeed": 0, "search": 0}, 30, "deliveries at 0")
            # The dispatcher, under its own principal, read the version and signed its event.
            wait_until(lambda: receiver.snapshot(), 60, "the employer's posting.accepted")
            (delivery,) = receiver.first_of_each()
            assert delivery.key() == ("posting.accepted", posting_id, 0) and delivery.verified_with == [0]
        finally:
            receiver.stop()
            api.close()
    finally:
        for process in reversed(started):
            process.stop()
        httpx.delete(f"{elasticsearch_url}/{index}-*", params={"allow_no_indices": "true"}, timeout=30)


def _board(port: int, board: str, posting_id: str) -> list[int]:
    response = httpx.get(f"http://127.0.0.1:{port}/_sandbox/{board}/postings/{posting_id}")
    return response.json()["versions"] if response.status_code == 200 else []


def test_the_indexer_cannot_write_postings(guarded: GuardedKafka):
    assert code(produced(guarded.as_role(Role.INDEXER), guarded.topics.postings)) == DENIED
    # ... while what its row allows goes through.
    assert produced(guarded.as_role(Role.INDEXER), guarded.topics.dlq(Component.SEARCH_INDEXER)) is None


def test_the_audit_trail_is_appended_to_by_its_writers_only_and_never_read_or_erased(
    guarded: GuardedKafka,
):
    api, audit = guarded.as_role(Role.API), guarded.topics.audit

    assert produced(api, audit) is None  # its producer's ACL: WRITE on the audit topic
    assert code(read_error(api, audit)) == DENIED
    admin = KafkaClients(api).admin()
    assert refusal(admin.delete_records([TopicPartition(audit, 0, 1)])) == DENIED
    shorter = ConfigResource(
        ConfigResource.Type.TOPIC,
        audit,
        incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    assert refusal(admin.incremental_alter_configs([shorter])) == DENIED
    # Nor can it write the log of record around the sequencer.
    assert code(produced(api, guarded.topics.postings)) == DENIED

    for role in (Role.SEQUENCER, Role.INDEXER, Role.OPERATOR):
        assert code(produced(guarded.as_role(role), audit)) == DENIED, role
    # A board consumer appends a redrive request it refused (consumers.letter_check), and
    # cannot read the trail either.
    for role in (Role.LINKEDIN, Role.INDEED):
        assert produced(guarded.as_role(role), audit) is None, role
        assert code(read_error(guarded.as_role(role), audit)) == DENIED, role


def test_a_board_consumers_credentials_cannot_ask_for_a_redrive(guarded: GuardedKafka):
    topics = guarded.topics
    for role in (Role.LINKEDIN, Role.INDEED):
        for board in ("linkedin", "indeed"):
            redrive = topics.redrive(Destination(board))
            assert code(produced(guarded.as_role(role), redrive)) == DENIED, (role, board)
    # The operator's row does allow it (`jobpost dlq redrive`).
    assert produced(guarded.as_role(Role.OPERATOR), topics.redrive(Destination.LINKEDIN)) is None
