"""What an existing topic is checked for: the design's needs, one line per problem."""

from __future__ import annotations

from runtime.kafka import KafkaSettings
from runtime.topics import topic_problems
from schemas.topics import DAY_MS, Topics

CLUSTER = KafkaSettings(replication_factor=3, min_insync_replicas=2)
SPECS = {spec.name: spec for spec in Topics("jobpost").specs(6, CLUSTER.min_insync_replicas)}
POSTINGS, COMMANDS, DLQ = SPECS["jobpost.postings"], SPECS["jobpost.commands"], SPECS["jobpost.linkedin.dlq"]


def as_created(spec):
    return dict(spec.config)


def test_a_topic_as_created_passes() -> None:
    for spec in SPECS.values():
        assert topic_problems(spec, spec.partitions, 3, as_created(spec), CLUSTER) == [], spec.name


def test_each_problem_is_one_line() -> None:
    config = {
        **as_created(POSTINGS),
        "min.insync.replicas": "1",
        "delete.retention.ms": str(DAY_MS),
        "min.compaction.lag.ms": "0",
    }

    problems = topic_problems(POSTINGS, 6, 1, config, CLUSTER)

    assert problems == [
        "jobpost.postings has replication factor 1, expected at least 3 (JOBPOST_KAFKA_REPLICATION_FACTOR)",
        "jobpost.postings has min.insync.replicas=1, expected at least 2 (JOBPOST_KAFKA_MIN_INSYNC_REPLICAS)",
        "jobpost.postings has min.compaction.lag.ms=0, expected at least 604800000 (7 days)",
        "jobpost.postings has delete.retention.ms=86400000 (1 day), expected at least 604800000 (7 days)",
    ]


def test_partitions_and_cleanup_policy_as_before() -> None:
    problems = topic_problems(
        POSTINGS, 4, 3, {**as_created(POSTINGS), "cleanup.policy": "compact,delete"}, CLUSTER
    )

    assert problems == [
        "jobpost.postings has 4 partitions, expected 6",
        "jobpost.postings has cleanup.policy=compact,delete, expected compact",
    ]


def test_more_in_sync_replicas_than_replicas_would_refuse_every_write() -> None:
    problems = topic_problems(COMMANDS, 6, 3, {**as_created(COMMANDS), "min.insync.replicas": "4"}, CLUSTER)

    assert problems == ["jobpost.commands has min.insync.replicas=4 above its 3 replicas: every write fails"]


def test_retention_is_a_floor() -> None:
    shorter = {**as_created(DLQ), "retention.ms": str(7 * DAY_MS)}
    longer = {**as_created(DLQ), "retention.ms": str(90 * DAY_MS)}
    forever = {**as_created(DLQ), "retention.ms": "-1"}

    assert topic_problems(DLQ, 6, 3, shorter, CLUSTER) == [
        "jobpost.linkedin.dlq has retention.ms=604800000 (7 days), expected at least 2592000000 (30 days)"
    ]
    assert topic_problems(DLQ, 6, 3, longer, CLUSTER) == []
    assert topic_problems(DLQ, 6, 3, forever, CLUSTER) == []


def test_more_replicas_than_asked_for_are_fine() -> None:
    local = KafkaSettings(replication_factor=1, min_insync_replicas=1)

    assert topic_problems(COMMANDS, 6, 3, as_created(COMMANDS), local) == []
