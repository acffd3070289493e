"""Shared pieces of the benchmarks: a fresh topic prefix on the local broker (and its removal),
percentiles."""

from __future__ import annotations

import os
import statistics
import time
import uuid

from confluent_kafka import KafkaError, KafkaException

from jobpost_dev import stack
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.topics import delete_topics, ensure_topics


def local_kafka(partitions: int = 6) -> KafkaSettings:
    """Topics of their own on the broker `KAFKA_BOOTSTRAP_SERVERS` names (as the tests
    choose theirs; left alone, whoever runs it), else on the local broker, started if needed."""
    settings = stack.StackSettings()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        stack.kafka_for(settings).start()
    replicated = settings.brokers > 1  # JOBPOST_STACK_BROKERS=3: replication factor 3, min ISR 2
    kafka = KafkaSettings(
        bootstrap_servers=bootstrap or settings.kafka_bootstrap,
        topic_prefix=f"bench{uuid.uuid4().hex[:8]}",
        partitions=partitions,
        replication_factor=settings.brokers if replicated else 1,
        min_insync_replicas=2 if replicated else 1,
    )
    ensure_topics(kafka)
    return kafka


def delete_prefix(kafka: KafkaSettings, wait_s: float = 60.0) -> None:
    """The run's topics and consumer groups, so the disk does not fill up. A group keeps a
    killed member until its session times out: deleting it is tried again until then."""
    delete_topics(kafka)
    admin = KafkaClients(kafka).admin()
    prefix = kafka.topic_prefix
    deadline = time.monotonic() + wait_s
    while groups := [
        g.group_id for g in admin.list_consumer_groups().result(30).valid if g.group_id.startswith(prefix)
    ]:
        failed = []
        for group, future in admin.delete_consumer_groups(groups, request_timeout=30).items():
            try:
                future.result(60)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.NON_EMPTY_GROUP or time.monotonic() > deadline:
                    raise
                failed.append(group)
        if not failed:
            return
        time.sleep(1)


def percentiles(samples_s: list[float]) -> str:
    if not samples_s:
        return "no samples"
    ms = sorted(s * 1000 for s in samples_s)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return f"p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, max {ms[-1]:.1f} ms"
