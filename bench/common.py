"""Shared pieces of the benchmarks: a fresh topic prefix on the local broker, percentiles."""

from __future__ import annotations

import statistics
import uuid

from jobpost import stack
from schemas.kafka import KafkaSettings
from schemas.topics import ensure_topics


def local_kafka(partitions: int = 6) -> KafkaSettings:
    """Topics of their own on the local broker (started if needed)."""
    settings = stack.StackSettings()
    stack.kafka_for(settings).start()
    replicated = settings.brokers > 1  # JOBPOST_STACK_BROKERS=3: replication factor 3, min ISR 2
    kafka = KafkaSettings(
        bootstrap_servers=settings.kafka_bootstrap,
        topic_prefix=f"bench{uuid.uuid4().hex[:8]}",
        partitions=partitions,
        replication_factor=settings.brokers if replicated else 1,
        min_insync_replicas=2 if replicated else 1,
    )
    ensure_topics(kafka)
    return kafka


def percentiles(samples_s: list[float]) -> str:
    if not samples_s:
        return "no samples"
    ms = sorted(s * 1000 for s in samples_s)
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return f"p50 {q[49]:.1f} ms, p99 {q[98]:.1f} ms, max {ms[-1]:.1f} ms"
