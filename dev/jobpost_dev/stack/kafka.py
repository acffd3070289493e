"""Kafka (KRaft) nodes from Maven Central jars: one node, or one of a three-node cluster."""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
from pathlib import Path

from jobpost_dev.ports import Port
from jobpost_dev.stack.process import Progress, Server, megabytes, quiet
from jobpost_dev.stack.settings import POMS, StackError, StackSettings, java_home, mvn
from jobpost_dev.stack.tls import CertificateAuthority

SCRAM = "SCRAM-SHA-512"


class KafkaServer(Server):
    """One KRaft node (combined broker + controller) on 127.0.0.1.

    With one broker it is "kafka", node 1, on kafka_port / kafka_controller_port; with
    three it is "kafka-<node id>", one of the static quorum (see StackSettings.kafka_ports).
    Each node has its own folder (data, server.properties), log file and pid file.

    With `kafka_sasl_ssl_port` the node also listens with SASL_SSL (SCRAM-SHA-512) there,
    its certificate signed by the CA in `settings.tls_dir` (one is made when missing), its
    users written when the storage is formatted (`kafka-storage format --add-scram`) or, for
    a storage formatted before, by `kafka-configs` once it answers. PLAINTEXT stays for the
    broker itself and the stack's readiness probe; a client that bootstraps from the
    SASL_SSL port is told only SASL_SSL addresses (Kafka answers metadata with the
    addresses of the listener asked), so all its traffic goes through TLS. With
    `kafka_authorizer` the node authorizes every request by ACLs (see `_authorizer_properties`).
    """

    version = "4.1.0"
    download_mb = 54  # the broker, kafka-tools and their runtime dependencies

    def __init__(self, settings: StackSettings, node_id: int = 1) -> None:
        super().__init__("kafka" if settings.brokers == 1 else f"kafka-{node_id}", settings)
        self.node_id = node_id
        self.client_port, self.controller_port = settings.kafka_ports()[node_id - 1]
        self._users_pending = False  # SCRAM users to add once a storage formatted before answers

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def sasl_ssl_address(self) -> str | None:
        port = self.settings.kafka_sasl_ssl_port
        return f"127.0.0.1:{port}" if port else None

    @property
    def jars(self) -> Path:
        return self.settings.dir / "jars" / "kafka"

    def fetch(self, progress: Progress = quiet) -> None:
        if self.jars.is_dir() and any(self.jars.glob("kafka_2.13-*.jar")):
            return
        progress(
            f"kafka: fetching org.apache.kafka:kafka_2.13 {self.version} and its dependencies"
            f" from Maven Central (~{self.download_mb} MB) ..."
        )
        tmp = self.jars.with_name("kafka.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        mvn(
            POMS / "kafka" / "pom.xml",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-Dkafka.version={self.version}",
            f"-DoutputDirectory={tmp}",
        )
        tmp.rename(self.jars)
        jars = len(list(self.jars.glob("*.jar")))
        progress(f"kafka: {jars} jars, {megabytes(self.jars):.0f} MB in {self.jars}")

    def fetched_into(self) -> Path:
        return self.jars

    def addresses(self) -> list[str]:
        return [
            self.address,
            *([self.sasl_ssl_address] if self.sasl_ssl_address else []),
        ]

    def ports(self) -> list[Port]:
        # Three nodes take their ports from JOBPOST_STACK_KAFKA_PORT alone (see kafka_ports).
        one = self.settings.brokers == 1
        found = [
            Port(self.client_port, self.name, "JOBPOST_STACK_KAFKA_PORT"),
            Port(
                self.controller_port,
                f"{self.name}'s controller",
                "JOBPOST_STACK_KAFKA_CONTROLLER_PORT" if one else "JOBPOST_STACK_KAFKA_PORT",
            ),
        ]
        if self.settings.kafka_sasl_ssl_port:
            listener = f"{self.name}'s SASL_SSL listener"
            found.append(
                Port(
                    self.settings.kafka_sasl_ssl_port,
                    listener,
                    "JOBPOST_STACK_KAFKA_SASL_SSL_PORT",
                )
            )
        return found

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    @property
    def data(self) -> Path:
        return self.home / "data"

    def prepare(self) -> None:
        self.write_config()
        self._users_pending = bool(self.settings.kafka_scram_users) and self.formatted()
        if not self.formatted():
            self.format_storage(self.cluster_id())

    def start(self, progress: Progress = quiet) -> bool:
        started = super().start(progress)
        if started and self._users_pending:
            self.add_scram_users()
        return started

    def keystore(self) -> tuple[Path, str]:
        """The SASL_SSL listener's PKCS#12 keystore and its password, issued by the CA in the
        stack's TLS folder (made there first when the folder has none)."""
        folder = self.settings.tls_dir
        keystore, password = folder / "kafka.p12", folder / "kafka.password"
        if keystore.exists() and password.exists():
            return keystore, password.read_text().strip()
        authority = CertificateAuthority(folder)
        if not authority.certificate.exists():
            authority = CertificateAuthority.create(folder)
        return authority.issue_keystore("kafka", ["localhost", "127.0.0.1"])

    def add_scram_users(self) -> None:
        """Write the SCRAM users into a storage formatted without them (Kafka's kafka-configs)."""
        for name, password in self.settings.kafka_scram_users.items():
            result = self.tool(
                "kafka.admin.ConfigCommand",
                "--bootstrap-server",
                self.address,
                "--alter",
                "--add-config",
                f"{SCRAM}=[password={password.get_secret_value()}]",
                "--entity-type",
                "users",
                "--entity-name",
                name,
            )
            if result.returncode != 0:
                raise StackError(f"adding the SCRAM user {name} failed:\n{result.stdout}{result.stderr}")

    def write_config(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in self.properties(self.data).items()))
        self.config_file.chmod(0o600)  # it may hold the keystore's password

    def properties(self, data: Path) -> dict[str, str]:
        s = self.settings
        voters = ",".join(f"{i}@127.0.0.1:{c}" for i, (_, c) in enumerate(s.kafka_ports(), start=1))
        replicas, isr = (1, 1) if s.brokers == 1 else (s.brokers, 2)
        properties = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.client_port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://{self.address}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "offsets.topic.replication.factor": str(replicas),
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": str(replicas),
            "transaction.state.log.min.isr": str(isr),
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": str(replicas),
            "share.coordinator.state.topic.min.isr": str(isr),
            "group.initial.rebalance.delay.ms": "0",
            # How long a silent broker keeps its leaders (and every write to them waits):
            # Kafka's defaults are 9 s and 2 s. A local cluster's nodes share one machine, so
            # a node that misses heartbeats for 3 s has died or stalled.
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            # How long the controllers wait for a silent active controller before electing
            # another (defaults 2 s and 1 s): a new active controller gives every broker a
            # fresh session first, so a stalled node that was also the active controller kept
            # its leaders for ~7 s instead of ~3 s (`make chaos`, 2026-12-03).
            "controller.quorum.fetch.timeout.ms": "1000",
            "controller.quorum.election.timeout.ms": "500",
            # How long a broker's own requests to another wait for an answer (default 30 s),
            # among them the transaction coordinator's commit and abort markers: one sent to
            # a node that stalled held a transaction's end, and so its producer's successor,
            # until the node woke 20 s later (`make chaos`); on time-out it goes to the
            # partition's new leader.
            "request.timeout.ms": "5000",
            # A crashed sequencer member's open transaction holds its successor back until
            # the broker aborts it: at most this long after its timeout (default 10 s).
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
            "auto.create.topics.enable": "false",
            # Local disks may be small: keep the broker's own segments modest.
            "log.segment.bytes": str(64 * 1024 * 1024),
            # Lets the integration tests see compaction happen in seconds, not hours, and
            # retention too (the erasure test: its topics' days are seconds).
            "log.cleaner.backoff.ms": "1000",
            "log.retention.check.interval.ms": "1000",
        }
        # What a topic created without them gets; jobpost's own topics say theirs.
        properties["default.replication.factor"] = str(replicas)
        properties["min.insync.replicas"] = str(isr)
        if self.sasl_ssl_address:
            properties.update(self._sasl_ssl_properties())
        if self.settings.kafka_authorizer:
            properties.update(self._authorizer_properties())
        return properties

    def _authorizer_properties(self) -> dict[str, str]:
        """KRaft's StandardAuthorizer: a client on the SASL_SSL listener may do what an ACL
        allows its user and nothing else. The broker's own listeners (PLAINTEXT, between
        broker and controller, and the stack's probe; CONTROLLER) authenticate nobody, so
        their principal, User:ANONYMOUS, is a super user, with the admin users named."""
        supers = ["User:ANONYMOUS", *(f"User:{name}" for name in self.settings.kafka_super_users)]
        return {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false",
            "super.users": ";".join(supers),
        }

    def _sasl_ssl_properties(self) -> dict[str, str]:
        keystore, password = self.keystore()
        listener = "listener.name.sasl_ssl"
        return {
            "listeners": f"PLAINTEXT://{self.address},SASL_SSL://{self.sasl_ssl_address},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.address},SASL_SSL://{self.sasl_ssl_address}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            f"{listener}.sasl.enabled.mechanisms": SCRAM,
            f"{listener}.{SCRAM.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            ),
            f"{listener}.ssl.keystore.type": "PKCS12",
            f"{listener}.ssl.keystore.location": str(keystore),
            f"{listener}.ssl.keystore.password": password,
        }

    def formatted(self) -> bool:
        return (self.data / "meta.properties").exists()

    def recorded_cluster_id(self) -> str | None:
        """The cluster id this node's storage was formatted with, if it was."""
        try:
            lines = (self.data / "meta.properties").read_text().splitlines()
        except FileNotFoundError:
            return None
        return next(
            (line.split("=", 1)[1].strip() for line in lines if line.startswith("cluster.id=")),
            None,
        )

    def cluster_id(self) -> str:
        """The id every node's storage is formatted with: any node's recorded one, else new."""
        for node in kafka_nodes(self.settings):
            recorded = node.recorded_cluster_id()
            if recorded:
                return recorded
        return new_cluster_id()

    def format_command(self, cluster_id: str) -> list[str]:
        users = [
            (
                "--add-scram",
                f"{SCRAM}=[name={name},password={password.get_secret_value()}]",
            )
            for name, password in self.settings.kafka_scram_users.items()
        ]
        return [
            *self._java(),
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={cluster_id}",  # one token, so no id is ever read as an option
            "-c",
            str(self.config_file),
            *(part for user in users for part in user),
        ]

    def format_storage(self, cluster_id: str | None = None) -> None:
        command = self.format_command(cluster_id or self.cluster_id())
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise StackError(f"formatting Kafka storage failed:\n{result.stdout}{result.stderr}")

    def _java(self) -> list[str]:
        java = java_home(self.settings) / "bin" / "java"
        return [
            str(java),
            f"-Xms{self.settings.kafka_heap}",
            f"-Xmx{self.settings.kafka_heap}",
            f"-Dlog4j2.configurationFile={POMS / 'kafka' / 'log4j2.properties'}",
            "-cp",
            f"{self.jars}/*",
        ]

    def command(self) -> list[str]:
        return [*self._java(), "kafka.Kafka", str(self.config_file)]

    def occupied(self) -> bool:
        return any(_listening(port) for port in (self.client_port, self.controller_port))

    def answers(self) -> bool:
        """This node answers a metadata request and lists itself as a live broker."""
        return self.node_id in (metadata_brokers(self.address) or set())

    def tool(self, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's Java tools (e.g. ProducerPerformance) against the jars."""
        self.fetch()
        return subprocess.run([*self._java(), main_class, *args], capture_output=True, text=True)


def kafka_nodes(settings: StackSettings) -> list[KafkaServer]:
    """Every Kafka node of the stack, node 1 first: one, or three for JOBPOST_STACK_BROKERS=3."""
    return [KafkaServer(settings, node_id) for node_id in range(1, settings.brokers + 1)]


def metadata_brokers(bootstrap: str, timeout: float = 2.0) -> set[int] | None:
    """The node ids of the live brokers a metadata request lists; None when none answers."""
    from runtime.kafka import KafkaSettings
    from runtime.kafka_clients import KafkaClients

    admin = KafkaClients(KafkaSettings(bootstrap_servers=bootstrap, config={"log_level": "0"})).admin()
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception:  # noqa: BLE001 - any failure means "not answering yet"
        return None
    return set(metadata.brokers)


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def new_cluster_id() -> str:
    """16 random bytes in URL-safe base64, as Kafka's `Uuid.randomUuid()` makes them: never
    one starting with "-" (Kafka's rule, since its tools would read such an id as an option;
    one format in 64 failed with "argument --cluster-id/-t: expected one argument")."""
    while True:
        candidate = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not candidate.startswith("-"):
            return candidate
