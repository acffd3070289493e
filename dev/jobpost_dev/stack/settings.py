"""Where the local servers live and listen, and the tools that fetch and run them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from jobpost_dev.project import project_root

# The Maven POMs that fetch each server, and Kafka's logging config: this package's own data.
POMS = Path(__file__).resolve().parent / "poms"


class StackError(RuntimeError):
    """A local server could not be fetched, started or stopped."""


class StackSettings(BaseSettings):
    """Where the local servers live and listen. Environment prefix `JOBPOST_STACK_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_STACK_")

    dir: Path = Field(default_factory=lambda: project_root() / ".stack")
    kafka_port: int = 9092
    kafka_controller_port: int = 9093
    kafka_heap: str = "512m"  # each node's
    brokers: int = 1  # 1, or 3: a three-node KRaft cluster (see kafka_ports)
    elasticsearch_port: int = 9200
    elasticsearch_heap: str = "512m"
    java_home: Path | None = None
    start_timeout_s: float = 120.0
    # Registry mode: a local Apicurio Registry beside Kafka and Elasticsearch (fetched,
    # started and stopped with them), for JOBPOST_SCHEMA_REGISTRY_URL.
    registry: bool = False
    registry_port: int = 8081  # its management interface (health, metrics) on the next one
    registry_heap: str = "256m"
    registry_java_home: Path | None = None  # a JDK >= 21; found by itself when unset
    # A SASL_SSL listener (SCRAM-SHA-512) beside PLAINTEXT, on one broker: its port, its users
    # (JSON {"name": "password"}), and where its CA and keystore are (made there if missing).
    kafka_sasl_ssl_port: int | None = None
    kafka_scram_users: dict[str, SecretStr] = Field(default_factory=dict)
    kafka_tls_dir: Path | None = None  # default <dir>/tls
    # With the SASL_SSL listener: KRaft's StandardAuthorizer on, nothing allowed without an
    # ACL, and these SCRAM users super users (the admin that creates topics and applies the
    # ACLs, `jobpost acls --apply`). The PLAINTEXT and controller listeners are the broker's
    # own (127.0.0.1): their anonymous principal is a super user too.
    kafka_authorizer: bool = False
    kafka_super_users: list[str] = Field(default_factory=list)

    @field_validator("brokers")
    @classmethod
    def _one_or_three(cls, brokers: int) -> int:
        if brokers not in (1, 3):
            raise ValueError("JOBPOST_STACK_BROKERS must be 1 or 3")
        return brokers

    @model_validator(mode="after")
    def _secured_listener(self) -> StackSettings:
        if self.kafka_sasl_ssl_port is None:
            if self.kafka_authorizer:
                raise ValueError("JOBPOST_STACK_KAFKA_AUTHORIZER needs JOBPOST_STACK_KAFKA_SASL_SSL_PORT")
            return self
        if self.brokers != 1:
            raise ValueError("JOBPOST_STACK_KAFKA_SASL_SSL_PORT is for one broker only")
        if not self.kafka_scram_users:
            raise ValueError("JOBPOST_STACK_KAFKA_SASL_SSL_PORT needs JOBPOST_STACK_KAFKA_SCRAM_USERS")
        if self.kafka_authorizer and not self.kafka_super_users:
            raise ValueError("JOBPOST_STACK_KAFKA_AUTHORIZER needs JOBPOST_STACK_KAFKA_SUPER_USERS")
        # Kafka's tools read a credential as SCRAM-SHA-512=[name=...,password=...].
        plain = re.compile(r"[A-Za-z0-9._~-]+")
        for name, password in self.kafka_scram_users.items():
            if not (plain.fullmatch(name) and plain.fullmatch(password.get_secret_value())):
                raise ValueError("SCRAM user names and passwords: letters, digits and . _ ~ - only")
        return self

    @property
    def tls_dir(self) -> Path:
        return self.kafka_tls_dir or self.dir / "tls"

    def kafka_ports(self) -> list[tuple[int, int]]:
        """(client port, controller port) of each node, node 1 first.

        One broker: kafka_port and kafka_controller_port. Three: kafka_port, +2, +4 for
        clients, each one's next port for its controller (9092/9093, 9094/9095, 9096/9097).
        """
        if self.brokers == 1:
            return [(self.kafka_port, self.kafka_controller_port)]
        return [(self.kafka_port + 2 * i, self.kafka_port + 2 * i + 1) for i in range(self.brokers)]

    @property
    def kafka_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{client}" for client, _controller in self.kafka_ports())

    @property
    def elasticsearch_url(self) -> str:
        return f"http://127.0.0.1:{self.elasticsearch_port}"

    @property
    def registry_url(self) -> str:
        """Apicurio's Confluent-compatible API, what JOBPOST_SCHEMA_REGISTRY_URL names."""
        return f"http://127.0.0.1:{self.registry_port}/apis/ccompat/v7"


def java_home(settings: StackSettings) -> Path:
    if settings.java_home:
        return settings.java_home
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"])
    java = shutil.which("java")
    if java is None:
        raise StackError("no JDK found: install a JDK >= 17 or set JAVA_HOME")
    return Path(java).resolve().parent.parent


def mvn(pom: Path, *goals: str) -> None:
    if shutil.which("mvn") is None:
        raise StackError("Maven (mvn) is needed to fetch the server jars")
    result = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(pom), *goals],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise StackError(f"mvn failed for {pom}:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
