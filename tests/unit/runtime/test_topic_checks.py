"""What an existing topic is checked for: the design's needs, one line per problem."""

from __future__ import annotations

from runtime.kafka import KafkaSettings
from runtime.topics import topic_problems
from schemas.topics import DAY_MS, Topics, erasure_bound_ms

CLUSTER = KafkaSettings(replication_factor=3, min_insync_replicas=2)
SPECS = {spec.name: spec for spec in Topics("jobpost").specs(6, CLUSTER.min_insync_replicas)}
POSTINGS, COMMANDS, DLQ = SPECS["jobpost.postings"], SPECS["jobpost.commands"], SPECS["jobpost.linkedin.dlq"]
AUDIT = SPECS["jobpost.audit"]


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
    longer = {**as_created(AUDIT), "retention.ms": str(900 * DAY_MS)}
    forever = {**as_created(AUDIT), "retention.ms": "-1"}

    assert topic_problems(DLQ, 6, 3, shorter, CLUSTER) == [
        "jobpost.linkedin.dlq has retention.ms=604800000 (7 days), expected at least 2592000000 (30 days)"
    ]
    assert topic_problems(AUDIT, 6, 3, longer, CLUSTER) == []  # the audit holds no posting's text
    assert topic_problems(AUDIT, 6, 3, forever, CLUSTER) == []


def test_a_topic_that_may_hold_text_keeps_it_no_longer_than_the_erasure_bound() -> None:
    beyond = " it would keep a deleted posting's text beyond the erasure bound"
    longer = {**as_created(DLQ), "retention.ms": str(90 * DAY_MS)}
    forever = {**as_created(DLQ), "retention.ms": "-1"}
    never_rolled = {**as_created(COMMANDS), "segment.ms": str(7 * DAY_MS)}
    never_forced = {k: v for k, v in as_created(POSTINGS).items() if k != "max.compaction.lag.ms"}

    assert topic_problems(DLQ, 6, 3, longer, CLUSTER) == [
        "jobpost.linkedin.dlq has retention.ms=7776000000 (90 days), expected at most 2592000000"
        f" (30 days):{beyond}"
    ]
    assert topic_problems(DLQ, 6, 3, forever, CLUSTER) == [
        f"jobpost.linkedin.dlq has retention.ms=-1, expected at most 2592000000 (30 days):{beyond}"
    ]
    assert topic_problems(COMMANDS, 6, 3, never_rolled, CLUSTER) == [
        f"jobpost.commands has segment.ms=604800000 (7 days), expected at most 3600000 (1 hour):{beyond}"
    ]
    assert topic_problems(POSTINGS, 6, 3, never_forced, CLUSTER) == [
        f"jobpost.postings has max.compaction.lag.ms=None, expected at most 691200000 (8 days):{beyond}"
    ]


def test_the_times_that_bound_erasure_scale_with_the_day_and_no_other() -> None:
    day = 2_000
    scaled = {spec.name: spec.config for spec in Topics("jobpost").specs(6, 2, day_ms=day)}
    assert scaled["jobpost.commands"]["retention.ms"] == str(day)
    assert scaled["jobpost.postings"]["min.compaction.lag.ms"] == str(7 * day)
    assert scaled["jobpost.linkedin.dlq"]["retention.ms"] == str(30 * day)
    assert scaled["jobpost.audit"] == SPECS["jobpost.audit"].config  # no text: its year stays
    assert scaled["jobpost.replies"] == SPECS["jobpost.replies"].config
    assert erasure_bound_ms(day) == 31 * day and erasure_bound_ms() == 31 * DAY_MS


def test_more_replicas_than_asked_for_are_fine() -> None:
    local = KafkaSettings(replication_factor=1, min_insync_replicas=1)

    assert topic_problems(COMMANDS, 6, 3, as_created(COMMANDS), local) == []
