"""Creating the topics of `schemas.topics` idempotently, and checking them against what the
design needs: partitions (commands and postings co-partition), cleanup policy, replication
factor and `min.insync.replicas` (from the settings), and the retention settings the specs
fix as floors — `min.compaction.lag.ms` and `delete.retention.ms` of the compacted topics
(a consumer, or a local store, up to 7 days behind still sees every version and every
delete) and `retention.ms` of the others — and, on a topic that may hold a posting's text,
as ceilings with `segment.ms` and `max.compaction.lag.ms`: they bound erasure."""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from runtime.connection import StartRefused, connected_admin
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from schemas.topics import Topics, TopicSpec

# Settings of a spec that are floors: a larger value keeps more, which the design allows.
FLOORS = ("retention.ms", "min.compaction.lag.ms", "delete.retention.ms")
# And ceilings, on a topic that may hold a posting's text: a larger value keeps a deleted
# posting's text beyond the erasure bound (schemas.topics.ERASURE_DAYS).
CEILINGS = ("retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms", "segment.ms")


class TopicMismatchError(StartRefused):
    """Topics missing, or with settings that would break ordering, durability or retention."""


def ensure_topics(settings: KafkaSettings, topics: Topics | None = None, timeout: float = 30.0) -> list[str]:
    """Create missing topics; check existing ones. Returns the names created.

    Raises StartRefused when Kafka cannot be reached with these settings, TopicMismatchError
    (one problem per line) when an existing topic does not match (see `topic_problems`).
    """
    topics = topics or Topics(settings.topic_prefix)
    admin = connected_admin(settings)
    specs = topics.specs(settings.partitions, settings.min_insync_replicas, settings.erasure_day_ms)
    existing = admin.list_topics(timeout=timeout).topics
    missing = [s for s in specs if s.name not in existing]
    _align(admin, [s for s in specs if s.name in existing and s.aligned], timeout)
    _check(admin, settings, [s for s in specs if s.name in existing], existing)
    if missing:
        futures = admin.create_topics(
            [NewTopic(s.name, s.partitions, settings.replication_factor, config=s.config) for s in missing],
            operation_timeout=timeout,
        )
        refused = []
        for name, future in futures.items():
            try:
                future.result(timeout)
            except KafkaException as exc:
                if exc.args[0].code() != exc.args[0].TOPIC_ALREADY_EXISTS:
                    # e.g. a replication factor above the number of brokers
                    refused.append(f"{name} cannot be created: {exc.args[0].str()}")
                    continue
                # Created by a concurrent caller a moment ago: it must still be right, once
                # the broker knows it (until then it answers "unknown topic").
                again = _settled_metadata(admin, name, timeout)
                _check(admin, settings, [s for s in missing if s.name == name], again)
        if refused:
            raise TopicMismatchError(refused)
    return [s.name for s in missing]


def check_at_start(settings: KafkaSettings, topics: Topics | None = None) -> None:
    """What every component checks before it starts: Kafka answers with these settings and
    every topic exists and matches. Raises StartRefused (exit 2 from the command line)."""
    admin = connected_admin(settings)
    topics = topics or Topics(settings.topic_prefix)
    specs = topics.specs(settings.partitions, settings.min_insync_replicas, settings.erasure_day_ms)
    existing = admin.list_topics(timeout=settings.start_timeout_s).topics
    missing = [
        f"{s.name} does not exist (`jobpost topics` creates every topic)"
        for s in specs
        if s.name not in existing
    ]
    try:
        _check(admin, settings, [s for s in specs if s.name in existing], existing)
    except TopicMismatchError as exc:
        missing += exc.problems
    if missing:
        raise TopicMismatchError(missing)


def topic_problems(
    spec: TopicSpec, partitions: int, replicas: int, config: Mapping[str, str], settings: KafkaSettings
) -> list[str]:
    """What is wrong with one existing topic, one line each; empty when it matches."""
    name, problems = spec.name, []
    if partitions != spec.partitions:
        problems.append(f"{name} has {partitions} partitions, expected {spec.partitions}")
    policy = config.get("cleanup.policy")
    if policy != spec.cleanup_policy:
        problems.append(f"{name} has cleanup.policy={policy}, expected {spec.cleanup_policy}")
    if replicas < settings.replication_factor:
        problems.append(
            f"{name} has replication factor {replicas}, expected at least {settings.replication_factor}"
            " (JOBPOST_KAFKA_REPLICATION_FACTOR)"
        )
    isr = _number(config.get("min.insync.replicas"))
    if isr is None or isr < settings.min_insync_replicas:
        problems.append(
            f"{name} has min.insync.replicas={config.get('min.insync.replicas')}, expected at least"
            f" {settings.min_insync_replicas} (JOBPOST_KAFKA_MIN_INSYNC_REPLICAS)"
        )
    elif isr > replicas:
        problems.append(
            f"{name} has min.insync.replicas={isr} above its {replicas} replicas: every write fails"
        )
    for key in FLOORS:
        if key not in spec.config:
            continue
        floor, value = int(spec.config[key]), _number(config.get(key))
        forever = key == "retention.ms" and value == -1
        if not forever and (value is None or value < floor):
            problems.append(
                f"{name} has {key}={config.get(key)}{_as_days(value)}, expected at least {floor}"
                f"{_as_days(floor)}"
            )
    return problems + (_beyond_erasure(spec, config) if spec.holds_text else [])


def _beyond_erasure(spec: TopicSpec, config: Mapping[str, str]) -> list[str]:
    problems = []
    for key in CEILINGS:
        if key not in spec.config:
            continue
        ceiling, value = int(spec.config[key]), _number(config.get(key))
        if value is None or value < 0 or value > ceiling:
            problems.append(
                f"{spec.name} has {key}={config.get(key)}{_as_days(value)}, expected at most {ceiling}"
                f"{_as_days(ceiling)}: it would keep a deleted posting's text beyond the erasure bound"
            )
    return problems


def _check(admin: AdminClient, settings: KafkaSettings, specs: list[TopicSpec], existing: dict) -> None:  # type: ignore[type-arg]
    if not specs:
        return
    configs = _configs(admin, [s.name for s in specs])
    problems = []
    for spec in specs:
        partitions = existing[spec.name].partitions
        replicas = min((len(p.replicas) for p in partitions.values()), default=0)
        problems += topic_problems(spec, len(partitions), replicas, configs[spec.name], settings)
    if problems:
        raise TopicMismatchError(problems)


def _configs(admin: AdminClient, names: list[str], wait_s: float = 15.0) -> dict[str, dict[str, str]]:
    """Each topic's effective settings (its own, else the broker's defaults), asked again
    while the broker still calls a topic created a moment ago unknown."""
    found: dict[str, dict[str, str]] = {}
    deadline = time.monotonic() + wait_s
    pending = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names]
    while pending:
        retry = []
        for resource, future in admin.describe_configs(pending).items():
            try:
                found[resource.name] = {k: str(v.value) for k, v in future.result().items()}
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() > deadline:
                    raise
                retry.append(resource)
        if retry:
            time.sleep(0.2)
        pending = retry
    return found


def _align(admin: AdminClient, specs: list[TopicSpec], timeout: float) -> None:
    """Bring the settings that may change in place (`TopicSpec.aligned`, e.g. the commands'
    LogAppendTime) to the spec on topics created before they were part of it."""
    if not specs:
        return
    by_name = {s.name: s for s in specs}
    changes = []
    for resource, future in admin.describe_configs(
        [ConfigResource(ConfigResource.Type.TOPIC, s.name) for s in specs]
    ).items():
        current = future.result(timeout)
        wrong = {k: v for k, v in by_name[resource.name].aligned.items() if current[k].value != v}
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in wrong.items()]
        if entries:
            changes.append(
                ConfigResource(ConfigResource.Type.TOPIC, resource.name, incremental_configs=entries)
            )
    for future in admin.incremental_alter_configs(changes).values() if changes else ():
        future.result(timeout)


def _settled_metadata(admin: AdminClient, name: str, timeout: float) -> dict:  # type: ignore[type-arg]
    """The topic's metadata once the broker lists its partitions (a topic just created by
    someone else may not be listed yet)."""
    deadline = time.monotonic() + timeout
    while True:
        topics = admin.list_topics(topic=name, timeout=timeout).topics
        if (topics[name].error is None and topics[name].partitions) or time.monotonic() > deadline:
            return topics
        time.sleep(0.2)


def _number(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _as_days(ms: int | None) -> str:
    if ms is None or ms <= 0:
        return ""
    days, hours = ms / 86_400_000, ms / 3_600_000
    if days >= 1:
        return f" ({days:g} day{'s' if days != 1 else ''})"
    return f" ({hours:g} hour{'s' if hours != 1 else ''})"


def delete_topics(settings: KafkaSettings, timeout: float = 60.0) -> list[str]:
    """Delete every topic of the settings' prefix (`<prefix>.*`): what a test or a benchmark
    made, so a long-lived development broker does not collect thousands of partitions (one
    ran out of heap at ~14,700). Returns the names deleted."""
    admin = KafkaClients(settings).admin()
    prefix = f"{settings.topic_prefix}."
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
    for future in admin.delete_topics(names, operation_timeout=30).values() if names else []:
        future.result(timeout)
    return names
