"""A single-node Kafka (KRaft) broker from Maven Central jars."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path

from jobpost.stack.process import Progress, Server, megabytes, quiet
from jobpost.stack.settings import POMS, StackError, StackSettings, java_home, mvn


class KafkaServer(Server):
    """A single-node KRaft broker (combined broker + controller) on 127.0.0.1."""

    version = "4.1.0"
    download_mb = 54  # the broker, kafka-tools and their runtime dependencies

    def __init__(self, settings: StackSettings) -> None:
        super().__init__("kafka", settings)

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
        return [self.settings.kafka_bootstrap]

    @property
    def config_file(self) -> Path:
        return self.home / "server.properties"

    def prepare(self) -> None:
        data = self.home / "data"
        self.home.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in self.properties(data).items()))
        if not (data / "meta.properties").exists():
            self.format_storage()

    def properties(self, data: Path) -> dict[str, str]:
        s = self.settings
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{s.kafka_controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{s.kafka_port},CONTROLLER://127.0.0.1:{s.kafka_controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{s.kafka_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "10",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "10",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # Local disks may be small: keep the broker's own segments modest.
            "log.segment.bytes": str(64 * 1024 * 1024),
            # Lets the integration tests see compaction happen in seconds, not hours.
            "log.cleaner.backoff.ms": "1000",
        }

    def format_storage(self) -> None:
        cluster_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        format_command = ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(self.config_file)]
        result = subprocess.run(
            [*self._java(), *format_command],
            capture_output=True,
            text=True,
        )
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

    def answers(self) -> bool:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.settings.kafka_bootstrap, "log_level": 0})
        try:
            admin.list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - any failure means "not answering yet"
            return False
        return True

    def tool(self, main_class: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's Java tools (e.g. ProducerPerformance) against the jars."""
        self.fetch()
        return subprocess.run([*self._java(), main_class, *args], capture_output=True, text=True)
