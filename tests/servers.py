"""Which Kafka and Elasticsearch the tests use, in the order DESIGN.md gives:

1. servers named by `KAFKA_BOOTSTRAP_SERVERS` / `ELASTICSEARCH_URL`;
2. testcontainers, when a Docker engine answers;
3. the local servers of `jobpost stack`, started when they are not running (and stopped
   again at the end of the session by whoever started them).

The containers are plain `DockerContainer`s: testcontainers' `KafkaContainer` only runs
Confluent's cp-kafka images, and `ElasticSearchContainer.get_url()` is gone since 4.14.
They use `waiting_for` and the wait strategies of `testcontainers.core.wait_strategies`,
both new in testcontainers 4.13 (hence `testcontainers>=4.13,<5`). Their broker and node
settings follow `jobpost stack`'s, so a test behaves the same on either.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import tarfile
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal

from confluent_kafka.schema_registry import SchemaRegistryClient

from jobpost_dev import stack
from runtime.kafka import KafkaSettings

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer

KAFKA_IMAGE = "apache/kafka:4.1.0"
ELASTICSEARCH_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:8.19.0"

Source = Literal["env", "docker", "local"]


def one_broker(bootstrap: str, prefix: str, partitions: int) -> KafkaSettings:
    """Kafka settings for the tests' Kafka, one broker whichever it is: replication factor 1
    and min.insync.replicas 1, said explicitly (the defaults are a cluster's, 3 and 2)."""
    return KafkaSettings(
        bootstrap_servers=bootstrap,
        topic_prefix=prefix,
        partitions=partitions,
        replication_factor=1,
        min_insync_replicas=1,
    )


def choose(env: Mapping[str, str], variable: str, docker_answers: Callable[[], bool]) -> Source:
    """Where a server comes from; Docker is asked only when the variable names none."""
    if env.get(variable):
        return "env"
    if docker_answers():
        return "docker"
    return "local"


def docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:  # noqa: BLE001 - no client, no socket, no engine: all mean "no Docker"
        return False
    return True


@contextlib.contextmanager
def kafka_bootstrap() -> Iterator[str]:
    source = choose(os.environ, "KAFKA_BOOTSTRAP_SERVERS", docker_answers)
    if source == "env":
        yield os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    elif source == "docker":
        yield from _kafka_container()
    else:
        yield from _local(stack.KafkaServer, lambda s: s.kafka_bootstrap)


@contextlib.contextmanager
def elasticsearch_url() -> Iterator[str]:
    source = choose(os.environ, "ELASTICSEARCH_URL", docker_answers)
    if source == "env":
        yield os.environ["ELASTICSEARCH_URL"]
    elif source == "docker":
        yield from _elasticsearch_container()
    else:
        yield from _local(stack.ElasticsearchServer, lambda s: s.elasticsearch_url)


@contextlib.contextmanager
def schema_registry_url() -> Iterator[str]:
    """`SCHEMA_REGISTRY_URL`, else the local stack's Apicurio Registry (fetched and started
    when not running: ~5 s, with or without Docker, so no container path)."""
    if os.environ.get("SCHEMA_REGISTRY_URL"):
        yield os.environ["SCHEMA_REGISTRY_URL"]
    else:
        yield from _local(stack.RegistryServer, lambda s: s.registry_url)


def registry_client(url: str) -> SchemaRegistryClient:
    """confluent-kafka's client of the registry, with a timeout: without one a response
    the registry never sent held a test until pytest's 10-minute limit (a CI run); with
    one the client retries the request (`max.retries`, on transport errors)."""
    return SchemaRegistryClient({"url": url, "timeout": 10})


# Kafka: one KRaft broker + controller. Clients reach the PLAINTEXT listener through a port
# Docker picks, so what it advertises is known only once the container runs: the container
# waits for a start script, written after start, that exports the advertised listeners and
# runs the image's own start command (testcontainers-java does the same for this image).
# The broker reaches itself (transaction markers) through BROKER, inside the container.
KAFKA_CLIENT_PORT = 9092
KAFKA_START_SCRIPT = "/tmp/jobpost-kafka-start.sh"
KAFKA_ENV = {
    "CLUSTER_ID": "5L6g3nShT-eMCtK--X86sw",
    "KAFKA_NODE_ID": "1",
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,BROKER://0.0.0.0:9093,CONTROLLER://0.0.0.0:9094",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "KAFKA_INTER_BROKER_LISTENER_NAME": "BROKER",
    "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
    "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9094",
    "KAFKA_NUM_PARTITIONS": "1",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS": "10",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
    "KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS": "10",
    "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR": "1",
    "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "1",
    "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
    "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    # Lets the integration tests see compaction happen in seconds, as on the local broker.
    "KAFKA_LOG_CLEANER_BACKOFF_MS": "1000",
    "KAFKA_LOG_SEGMENT_BYTES": str(64 * 1024 * 1024),
    "KAFKA_HEAP_OPTS": "-Xms512m -Xmx512m",
}


def kafka_start_script(host: str, port: int) -> str:
    """The container's start script, once Docker has published the client port on host:port."""
    advertised = f"PLAINTEXT://{host}:{port},BROKER://localhost:9093"
    return f"export KAFKA_ADVERTISED_LISTENERS={shlex.quote(advertised)}\nexec /etc/kafka/docker/run\n"


def _kafka_container() -> Iterator[str]:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    waiting = f"while [ ! -f {KAFKA_START_SCRIPT} ]; do sleep 0.1; done; exec sh {KAFKA_START_SCRIPT}"
    container = (
        DockerContainer(KAFKA_IMAGE)
        .with_envs(**KAFKA_ENV)
        .with_exposed_ports(KAFKA_CLIENT_PORT)
        .with_command(["sh", "-c", waiting])
    )
    with container:
        host = container.get_container_host_ip()
        port = container.get_exposed_port(KAFKA_CLIENT_PORT)
        _put_file(container, KAFKA_START_SCRIPT, kafka_start_script(host, port))
        LogMessageWaitStrategy("Kafka Server started").with_startup_timeout(120).wait_until_ready(container)
        yield f"{host}:{port}"


def _put_file(container: DockerContainer, path: str, text: str) -> None:
    content = text.encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo(os.path.basename(path))
        info.size = len(content)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(content))
    container.get_wrapped_container().put_archive(os.path.dirname(path), archive.getvalue())


# Elasticsearch: one node, security off, the same node settings as `jobpost stack`'s.
ELASTICSEARCH_PORT = 9200
ELASTICSEARCH_ENV = {
    "discovery.type": "single-node",
    "xpack.security.enabled": "false",
    "cluster.routing.allocation.disk.threshold_enabled": "false",
    "indices.breaker.total.use_real_memory": "false",
    "action.destructive_requires_name": "false",
    "ES_JAVA_OPTS": "-Xms512m -Xmx512m",
}


def _elasticsearch_container() -> Iterator[str]:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import HttpWaitStrategy

    # The wait strategy's requests time out after 1 s, so the health call must answer sooner.
    health = HttpWaitStrategy(ELASTICSEARCH_PORT, "/_cluster/health?wait_for_status=yellow&timeout=500ms")
    container = (
        DockerContainer(ELASTICSEARCH_IMAGE, mem_limit="1g")
        .with_envs(**ELASTICSEARCH_ENV)
        .with_exposed_ports(ELASTICSEARCH_PORT)
        .waiting_for(health.with_startup_timeout(180))
    )
    with container:
        yield container_url(container, ELASTICSEARCH_PORT)


def container_url(container: DockerContainer, port: int) -> str:
    return f"http://{container.get_container_host_ip()}:{container.get_exposed_port(port)}"


def _local(kind, address):  # type: ignore[no-untyped-def]
    settings = stack.StackSettings()
    server = kind(settings)
    started = server.start()
    try:
        yield address(settings)
    finally:
        if started:
            server.stop()
