"""Kafka principals and their ACLs: one principal per component, each allowed what its code
does and nothing else (`jobpost acls` prints the table and applies it, `runtime.acl_apply`).

The table is data: per role, the grants on topics (by literal name, or every topic of the
prefix), on consumer groups and on transactional ids. What every role shares is the start
check (`runtime.topics.check_at_start`): it lists and describes every topic of the prefix,
so each role may DESCRIBE and DESCRIBE_CONFIGS `<prefix>.*` — names and settings, no
records. Readers that assign partitions by hand and commit nothing (replays, restores,
probes, the API's views and reply reader) use groups named `<prefix>-<ReaderGroup>-<random>`
(`schemas.topics.Topics.reader_group`): the coordinator lookup asks DESCRIBE on the group,
so those get DESCRIBE only; only a group that commits gets READ. No role needs
IDEMPOTENT_WRITE on the cluster: since Kafka 3.0 an idempotent producer is allowed by WRITE
on any topic (KIP-679). Topics are created (`jobpost topics`) and ACLs applied by an admin
principal (a super user), which is no role here.

A new component is a new `Role` and its row in
`roles()`; `tests/unit/runtime/test_acls.py` checks that every topic of `Topics.specs` is
written by some role and that only the roles the design names write the sensitive ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from schemas.enums import Destination
from schemas.topics import BOARDS, Component, ReaderGroup, Topics


class Role(StrEnum):
    """A Kafka principal's role: what one deployable (or the operator's commands) does."""

    API = "api"
    SEQUENCER = "sequencer"
    LINKEDIN = Destination.LINKEDIN.value
    INDEED = Destination.INDEED.value
    INDEXER = "indexer"  # `jobpost indexer` and `jobpost reindex`
    OPERATOR = "operator"  # `jobpost dlq list|redrive`
    WEBHOOKS = "webhooks"  # `jobpost webhooks`, the dispatcher
    REGISTRY = "registry"  # a schema registry that keeps its schemas in Kafka


class Resource(StrEnum):
    TOPIC = "topic"
    GROUP = "group"
    TRANSACTIONAL_ID = "transactional-id"


class Operation(StrEnum):
    READ = "READ"
    WRITE = "WRITE"
    DESCRIBE = "DESCRIBE"
    DESCRIBE_CONFIGS = "DESCRIBE_CONFIGS"


@dataclass(frozen=True)
class Grant:
    """Operations allowed on one resource: a literal name, or every name that starts with
    `name` (`prefixed`)."""

    resource: Resource
    name: str
    operations: tuple[Operation, ...]
    why: str
    prefixed: bool = False

    @property
    def pattern(self) -> str:
        return f"{self.name}*" if self.prefixed else self.name


@dataclass(frozen=True)
class Principal:
    role: Role
    user: str  # the SASL user name; the principal is `User:<user>`
    grants: tuple[Grant, ...]

    @property
    def principal(self) -> str:
        return f"User:{self.user}"


@dataclass(frozen=True)
class RegistryStorage:
    """Where a schema registry keeps its schemas in Kafka: Confluent Schema Registry's
    defaults (`kafkastore.topic`, `schema.registry.group.id`); Apicurio's KafkaSQL storage
    names its own (`apicurio.kafkasql.topic`, its consumer group)."""

    topic: str = "_schemas"
    group: str = "schema-registry"


R, W, D, DC = Operation.READ, Operation.WRITE, Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS


def _topic(name: str, *operations: Operation, why: str) -> Grant:
    return Grant(Resource.TOPIC, name, operations, why)


def _group(name: str, operation: Operation, why: str, prefixed: bool = False) -> Grant:
    return Grant(Resource.GROUP, name, (operation,), why, prefixed)


def _readers(topics: Topics, *purposes: ReaderGroup) -> tuple[Grant, ...]:
    return tuple(
        _group(topics.reader_group_prefix(p), D, f"{p.value}: {p.why}", prefixed=True) for p in purposes
    )


def roles(topics: Topics, registry: RegistryStorage | None = None) -> dict[Role, tuple[Grant, ...]]:
    """Each role's grants, for the topics and default group ids of `topics.prefix`."""
    registry = registry or RegistryStorage()
    start_check = Grant(
        Resource.TOPIC,
        f"{topics.prefix}.",
        (D, DC),
        "the start check lists and describes every topic of the prefix",
        prefixed=True,
    )
    sequencer_group = topics.group(Component.SEQUENCER)
    return {
        Role.API: (
            start_check,
            _topic(topics.commands, W, why="a write is a command for the sequencer"),
            _topic(topics.replies, R, why="the sequencer's answer to each command"),
            _topic(topics.postings, R, why="the postings view (reads, search's strong reads)"),
            _topic(topics.deliveries, R, why="the deliveries view"),
            _topic(topics.delivery_events, R, why="the timeline view"),
            *(_topic(topics.dlq(Component(b.value)), R, why="the dead letters view (/ops)") for b in BOARDS),
            *(_topic(topics.redrive(b), W, why="redrive from /ops") for b in BOARDS),
            _topic(topics.audit, W, why="the audit trail: appended, never read or deleted"),
            _topic(topics.webhooks, R, W, why="webhook endpoints registered, rotated, deleted; their view"),
            _topic(topics.webhook_replays, W, why="POST /webhooks/{id}/replay"),
            _topic(topics.dlq(Component.WEBHOOKS), R, why="an endpoint's dead letters view"),
            _topic(topics.board_status, R, why="the boards' status view (GET /ops/boards)"),
            _group(sequencer_group, D, "readiness: does a member own every partition of commands"),
            *(
                _group(topics.group(c), D, "the lag panel reads the group's committed offsets")
                for c in (Component.LINKEDIN, Component.INDEED, Component.SEARCH_INDEXER)
            ),
            *_readers(
                topics,
                ReaderGroup.REPLIES,
                ReaderGroup.VIEW,
                ReaderGroup.LAG_PROBE,
                ReaderGroup.REPLAY,
                ReaderGroup.RESTORE_PROBE,
            ),
        ),
        Role.SEQUENCER: (
            start_check,
            _topic(topics.commands, R, why="the commands it sequences"),
            _topic(topics.postings, R, W, why="writes each new version; derives its state from it"),
            _topic(topics.replies, W, why="answers each command"),
            _topic(topics.sequencer_state, R, W, why="its changelog, written and restored"),
            _topic(topics.dlq(Component.SEQUENCER), W, why="a command it cannot read"),
            _group(sequencer_group, Operation.READ, "its group, offsets committed in its transactions"),
            _group(f"{sequencer_group}-", D, "its probe and text reader", prefixed=True),
            Grant(
                Resource.TRANSACTIONAL_ID,
                f"{sequencer_group}-",
                (W, D),
                "one transactional id per member: <group>-<member>",
                prefixed=True,
            ),
            *_readers(topics, ReaderGroup.REPLAY, ReaderGroup.RESTORE_PROBE),
        ),
        **{Role(board.value): _board(topics, board, start_check) for board in BOARDS},
        Role.INDEXER: (
            start_check,
            _topic(topics.postings, R, why="what it indexes"),
            _topic(topics.deliveries, W, why="what it delivered (search's delivery state)"),
            _topic(topics.delivery_events, W, why="each attempt, for the timeline"),
            _topic(topics.dlq(Component.SEARCH_INDEXER), W, why="a record it cannot index"),
            _group(topics.group(Component.SEARCH_INDEXER), R, "its group"),
            *_readers(topics, ReaderGroup.REPLAY, ReaderGroup.REINDEX_SIZE),
        ),
        Role.WEBHOOKS: _webhooks(topics, start_check),
        Role.OPERATOR: (
            start_check,
            *(_topic(topics.dlq(Component(b.value)), R, why="jobpost dlq list") for b in BOARDS),
            *(_topic(topics.redrive(b), W, why="jobpost dlq redrive") for b in BOARDS),
            _topic(topics.delivery_events, R, why="what each redrive came to"),
            *_readers(topics, ReaderGroup.REPLAY, ReaderGroup.REDRIVE_PROBE, ReaderGroup.REDRIVE_OUTCOMES),
        ),
        Role.REGISTRY: (
            _topic(registry.topic, R, W, D, DC, why="the registry's schemas (its storage topic)"),
            _group(registry.group, R, "the registry's group (its leader election and reads)"),
        ),
    }


def _webhooks(topics: Topics, start_check: Grant) -> tuple[Grant, ...]:
    group = topics.group(Component.WEBHOOKS)
    return (
        start_check,
        _topic(topics.postings, R, why="posting.accepted, derived from each version"),
        _topic(topics.listing_events, R, why="the boards' events for employers"),
        _topic(topics.webhook_replays, R, why="replay requests"),
        _topic(topics.webhooks, R, W, why="the endpoints; an endpoint disabled by a 410"),
        _topic(topics.webhook_pending, R, W, why="deliveries waiting, written and restored"),
        _topic(topics.dlq(Component.WEBHOOKS), W, why="an event whose retries are spent"),
        _group(group, R, "its group"),
        _group(f"{group}-events", R, "its listing events reader's offsets"),
        _group(f"{group}-replays", R, "its replay requests reader's offsets"),
        _group(f"{group}-probe", D, "asks where its partitions end (the both-sources barrier)"),
        *_readers(topics, ReaderGroup.REPLAY, ReaderGroup.WEBHOOK_ENDPOINTS, ReaderGroup.WEBHOOK_PROBE),
    )


def _board(topics: Topics, board: Destination, start_check: Grant) -> tuple[Grant, ...]:
    component = Component(board.value)
    group = topics.group(component)
    return (
        start_check,
        _topic(topics.postings, R, why="what it delivers"),
        _topic(topics.redrive(board), R, why="redrive requests for this board, read and committed"),
        _topic(topics.deliveries, R, W, why="its delivery state, written and restored"),
        _topic(topics.delivery_events, W, why="each attempt, for the timeline"),
        _topic(topics.dlq(component), R, W, why="a version it gave up on; read: the letter a redrive names"),
        _topic(topics.audit, W, why="a redrive request refused (unlike its letter): appended, never read"),
        _topic(topics.listing_events, W, why="changes of the job at the board, for the employer's webhooks"),
        _topic(topics.board_status, W, why="its budgets, their use, its circuit (GET /ops/boards)"),
        _group(group, R, "its group"),
        _group(f"{group}-redrive", R, "its redrive reader's offsets"),
        *_readers(topics, ReaderGroup.REPLAY, ReaderGroup.RESTORE_PROBE, ReaderGroup.LETTERS),
    )


def principals(
    topics: Topics, users: dict[Role, str] | None = None, registry: RegistryStorage | None = None
) -> list[Principal]:
    """Every role's principal: its user from `users`, else `<prefix>-<role>`."""
    users = users or {}
    return [
        Principal(role, users.get(role, f"{topics.prefix}-{role.value}"), grants)
        for role, grants in roles(topics, registry).items()
    ]


def table(found: list[Principal]) -> str:
    """The principals and their grants as a Markdown table (what the docs show)."""
    lines = ["| principal | resource | name | operations | why |", "| --- | --- | --- | --- | --- |"]
    for principal in found:
        for grant in principal.grants:
            lines.append(
                f"| `{principal.principal}` ({principal.role.value}) | {grant.resource.value}"
                f" | `{grant.pattern}` | {', '.join(grant.operations)} | {grant.why} |"
            )
    return "\n".join(lines)
