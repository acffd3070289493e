"""The topics of DESIGN.md, their settings, and their idempotent creation."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from schemas.kafka import KafkaSettings

DAY_MS = 24 * 3600 * 1000
# The consumer groups that own a dead-letter topic: jobpost.<group>.dlq.
DEAD_LETTER_GROUPS = ("sequencer", "linkedin", "indeed", "search-indexer")


class TopicMismatchError(RuntimeError):
    """An existing topic has settings that would break ordering or retention guarantees."""


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)

    @property
    def cleanup_policy(self) -> str:
        return self.config.get("cleanup.policy", "delete")


@dataclass(frozen=True)
class Topics:
    """Names of every topic, derived from one prefix so tests can isolate themselves."""

    prefix: str = "jobpost"

    @property
    def postings(self) -> str:
        return f"{self.prefix}.postings"

    @property
    def commands(self) -> str:
        return f"{self.prefix}.commands"

    @property
    def replies(self) -> str:
        return f"{self.prefix}.replies"

    @property
    def deliveries(self) -> str:
        return f"{self.prefix}.deliveries"

    @property
    def delivery_events(self) -> str:
        """What each delivery attempt came to (the timeline), kept 7 days."""
        return f"{self.prefix}.delivery-events"

    @property
    def sequencer_state(self) -> str:
        """The sequencer's changelog: each posting's small state, co-partitioned with postings."""
        return f"{self.prefix}.sequencer-state"

    def dlq(self, group: str) -> str:
        return f"{self.prefix}.{group}.dlq"

    def specs(self, settings: KafkaSettings) -> list[TopicSpec]:
        n = settings.partitions
        isr = {"min.insync.replicas": str(settings.min_insync_replicas)}
        compacted = {
            **isr,
            "cleanup.policy": "compact",
            "min.compaction.lag.ms": str(7 * DAY_MS),
            "delete.retention.ms": str(7 * DAY_MS),
        }
        return [
            TopicSpec(self.postings, n, compacted),
            TopicSpec(self.commands, n, {**isr, "cleanup.policy": "delete", "retention.ms": str(DAY_MS)}),
            TopicSpec(self.replies, n, {**isr, "cleanup.policy": "delete", "retention.ms": str(3600 * 1000)}),
            TopicSpec(self.deliveries, n, compacted),
            TopicSpec(self.sequencer_state, n, compacted),
            TopicSpec(
                self.delivery_events, n, {**isr, "cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)}
            ),
            *(
                TopicSpec(
                    self.dlq(d), n, {**isr, "cleanup.policy": "delete", "retention.ms": str(30 * DAY_MS)}
                )
                for d in DEAD_LETTER_GROUPS
            ),
        ]


def ensure_topics(settings: KafkaSettings, topics: Topics | None = None, timeout: float = 30.0) -> list[str]:
    """Create missing topics; check existing ones. Returns the names created.

    Raises TopicMismatchError when an existing topic has another partition count (which
    would break co-partitioning of commands and postings) or another cleanup policy.
    """
    topics = topics or Topics(settings.topic_prefix)
    admin = AdminClient(settings.client_config())
    specs = topics.specs(settings)
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
