"""Local Kafka (KRaft) and Elasticsearch, run from Maven Central artifacts with the local JDK.

`jobpost stack fetch|start|stop|status` manage them. Everything lives under one folder
(default `.stack/` in the project, ignored by git): the fetched jars, server data, logs
and pid files. Starting a running server is a no-op; stopping kills its process group.
"""

from __future__ import annotations

from jobpost.stack.elasticsearch import ElasticsearchServer
from jobpost.stack.kafka import KafkaServer
from jobpost.stack.process import Server
from jobpost.stack.settings import StackError, StackSettings

__all__ = [
    "ElasticsearchServer",
    "KafkaServer",
    "Server",
    "StackError",
    "StackSettings",
    "servers",
]


def servers(settings: StackSettings) -> list[Server]:
    return [KafkaServer(settings), ElasticsearchServer(settings)]
