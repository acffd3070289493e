"""Creating the topics of `schemas.topics` idempotently, and checking existing ones."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from runtime.kafka import KafkaSettings
from schemas.topics import Topics, TopicSpec


class TopicMismatchError(RuntimeError):
    """An existing topic has settings that would break ordering or retention guarantees."""


def ensure_topics(settings: KafkaSettings, topics: Topics | None = None, timeout: float = 30.0) -> list[str]:
    """Create missing topics; check existing ones. Returns the names created.

    Raises TopicMismatchError when an existing topic has another partition count (which
    would break co-partitioning of commands and postings) or another cleanup policy.
    """
    topics = topics or Topics(settings.topic_prefix)
    admin = AdminClient(settings.client_config())
    specs = topics.specs(settings.partitions, settings.min_insync_replicas)
    existing = admin.list_topics(timeout=timeout).topics
    missing = [s for s in specs if s.name not in existing]
    _check_existing(admin, [s for s in specs if s.name in existing], existing)
    if missing:
        futures = admin.create_topics(
            [NewTopic(s.name, s.partitions, settings.replication_factor, config=s.config) for s in missing],
            operation_timeout=timeout,
        )
        for name, future in futures.items():
            try:
                future.result(timeout)
            except KafkaException as exc:
                if exc.args[0].code() != exc.args[0].TOPIC_ALREADY_EXISTS:
                    raise
                # Created by a concurrent caller a moment ago: it must still be right, once
                # the broker knows it (until then it answers "unknown topic").
                again = _settled_metadata(admin, name, timeout)
                _check_existing(admin, [s for s in missing if s.name == name], again)
    return [s.name for s in missing]


def _check_existing(admin: AdminClient, specs: list[TopicSpec], existing: dict) -> None:  # type: ignore[type-arg]
    problems = []
    for spec in specs:
        partitions = len(existing[spec.name].partitions)
        if partitions != spec.partitions:
            problems.append(f"{spec.name} has {partitions} partitions, expected {spec.partitions}")
    if specs:
        by_name = {s.name: s for s in specs}
        resources = [ConfigResource(ConfigResource.Type.TOPIC, s.name) for s in specs]
        for resource, future in admin.describe_configs(resources).items():
            spec = by_name[resource.name]
            policy = _cleanup_policy(admin, resource, future)
            if policy != spec.cleanup_policy:
                problems.append(f"{spec.name} has cleanup.policy={policy}, expected {spec.cleanup_policy}")
    if problems:
        raise TopicMismatchError("; ".join(problems))


def _settled_metadata(admin: AdminClient, name: str, timeout: float) -> dict:  # type: ignore[type-arg]
    """The topic's metadata once the broker lists its partitions (a topic just created by
    someone else may not be listed yet)."""
    deadline = time.monotonic() + timeout
    while True:
        topics = admin.list_topics(topic=name, timeout=timeout).topics
        if (topics[name].error is None and topics[name].partitions) or time.monotonic() > deadline:
            return topics
        time.sleep(0.2)


def _cleanup_policy(admin: AdminClient, resource: ConfigResource, future: Any, wait_s: float = 15.0) -> str:
    """The topic's cleanup.policy, asked again while the broker still calls a topic created a
    moment ago unknown."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return str(future.result()["cleanup.policy"].value)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                raise
        time.sleep(0.2)
        future = admin.describe_configs([resource])[resource]


def delete_topics(settings: KafkaSettings, timeout: float = 60.0) -> list[str]:
    """Delete every topic of the settings' prefix (`<prefix>.*`): what a test or a benchmark
    made, so a long-lived development broker does not collect thousands of partitions (one
    ran out of heap at ~14,700). Returns the names deleted."""
    admin = AdminClient(settings.client_config())
    prefix = f"{settings.topic_prefix}."
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    for future in admin.delete_topics(names, operation_timeout=30).values() if names else []:
        future.result(timeout)
    return names
