"""Local Kafka (KRaft) and Elasticsearch, run from Maven Central artifacts with the local JDK.

`jobpost stack fetch|start|stop|status` manage them. Everything lives under one folder
(default `.stack/` in the project's folder, ignored by git): the fetched jars, server data, logs
and pid files. Starting a running server is a no-op; stopping kills its process group.
Kafka is one node, or three (JOBPOST_STACK_BROKERS=3) managed together as "kafka";
kafka_nodes() gives each node on its own (its pid, start, stop, kill, address). In registry
mode (JOBPOST_STACK_REGISTRY=true) an Apicurio Registry runs beside them.
"""

from __future__ import annotations

from jobpost_dev.stack.cluster import KafkaCluster, kafka_for
from jobpost_dev.stack.elasticsearch import ElasticsearchServer
from jobpost_dev.stack.kafka import KafkaServer, kafka_nodes
from jobpost_dev.stack.process import Managed, Server
from jobpost_dev.stack.registry import RegistryServer
from jobpost_dev.stack.settings import StackError, StackSettings

__all__ = [
    "ElasticsearchServer",
    "KafkaCluster",
    "KafkaServer",
    "Managed",
    "RegistryServer",
    "Server",
    "StackError",
    "StackSettings",
    "kafka_for",
    "kafka_nodes",
    "servers",
]


def servers(settings: StackSettings, registry: bool | None = None) -> list[Managed]:
    """The local servers: Kafka and Elasticsearch, and the registry in registry mode (or
    when `registry` asks for it)."""
    found: list[Managed] = [kafka_for(settings), ElasticsearchServer(settings)]
    if settings.registry if registry is None else registry:
        found.append(RegistryServer(settings))
    return found
