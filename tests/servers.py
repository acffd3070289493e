"""Which Kafka and Elasticsearch the tests use, in the order DESIGN.md gives:

1. servers named by `KAFKA_BOOTSTRAP_SERVERS` / `ELASTICSEARCH_URL`;
2. testcontainers, when a Docker engine answers;
3. the local servers of `jobpost stack`, started when they are not running (and stopped
   again at the end of the session by whoever started them).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from jobpost import stack

KAFKA_IMAGE = "apache/kafka:4.1.0"
ELASTICSEARCH_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:8.19.0"


def docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:  # noqa: BLE001 - no client, no socket, no engine: all mean "no Docker"
        return False
    return True


@contextlib.contextmanager
def kafka_bootstrap() -> Iterator[str]:
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        yield os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    elif docker_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer(KAFKA_IMAGE).with_kraft() as container:
            yield container.get_bootstrap_server()
    else:
        yield from _local(stack.KafkaServer, lambda s: s.kafka_bootstrap)


@contextlib.contextmanager
def elasticsearch_url() -> Iterator[str]:
    if os.environ.get("ELASTICSEARCH_URL"):
        yield os.environ["ELASTICSEARCH_URL"]
    elif docker_answers():
        from testcontainers.elasticsearch import ElasticSearchContainer

        with ElasticSearchContainer(ELASTICSEARCH_IMAGE, mem_limit="1g") as container:
            yield container.get_url()
    else:
        yield from _local(stack.ElasticsearchServer, lambda s: s.elasticsearch_url)


def _local(kind, address):  # type: ignore[no-untyped-def]
    settings = stack.StackSettings()
    server = kind(settings)
    started = server.start()
    try:
        yield address(settings)
    finally:
        if started:
            server.stop()
