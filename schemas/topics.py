"""The topics of DESIGN.md and their settings, and the consumer groups (`Component`).

Creating and checking them against a cluster is `runtime.topics`."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import StrEnum

from schemas.enums import Destination

DAY_MS = 24 * 3600 * 1000
AUDIT_DAYS = 365  # the audit topic's retention: a year of who did what


BOARDS = (Destination.LINKEDIN, Destination.INDEED)  # the destinations that are job boards


class Component(StrEnum):
    """The consumer groups of the system. Each has the group id `<prefix>-<name>` and a
    dead-letter topic `<prefix>.<name>.dlq`; the one place either name is made."""

    SEQUENCER = "sequencer"
    LINKEDIN = Destination.LINKEDIN.value  # a board's consumers are named after it
    INDEED = Destination.INDEED.value
    SEARCH_INDEXER = "search-indexer"
    WEBHOOKS = "webhooks"  # the webhooks dispatcher

    def group_id(self, prefix: str) -> str:
        return f"{prefix}-{self.value}"

    @classmethod
    def delivering_to(cls, destination: Destination) -> Component:
        """The group that delivers to a destination (search: the indexer)."""
        return cls.SEARCH_INDEXER if destination == Destination.SEARCH else cls(destination.value)


class ReaderGroup(StrEnum):
    """Readers that assign partitions by hand and commit nothing: each names a group of its
    own, `<prefix>-<purpose>-<random>` (`Topics.reader_group`), so a principal's ACLs can
    name them by prefix (`runtime.acls`)."""

    REPLAY = "replay"
    RESTORE_PROBE = "restore-probe"
    VIEW = "view"  # the API's views and their probes
    REPLIES = "replies"
    LAG_PROBE = "lag-probe"
    REINDEX_SIZE = "reindex-size"
    REDRIVE_PROBE = "redrive-probe"
    REDRIVE_OUTCOMES = "redrive-outcomes"
    LETTERS = "letters"
    WEBHOOK_ENDPOINTS = "webhook-endpoints"
    WEBHOOK_PROBE = "webhook-probe"

    @property
    def why(self) -> str:
        return _READER_PURPOSES[self]


_READER_PURPOSES = {
    ReaderGroup.WEBHOOK_ENDPOINTS: "the webhooks dispatcher follows the registered endpoints",
    ReaderGroup.WEBHOOK_PROBE: "the webhooks dispatcher asks where endpoints end, where a replay starts",
    ReaderGroup.LETTERS: "a board consumer reads the dead letter a redrive request names",
    ReaderGroup.REPLAY: "reads a partition from the start (restores, dead letters, reindex)",
    ReaderGroup.RESTORE_PROBE: "asks where a restored partition ends",
    ReaderGroup.VIEW: "the API's views follow their topics",
    ReaderGroup.REPLIES: "the API's reader of its replies",
    ReaderGroup.LAG_PROBE: "the lag panel's reader",
    ReaderGroup.REINDEX_SIZE: "counts what a reindex will read",
    ReaderGroup.REDRIVE_PROBE: "asks where the delivery events end before a redrive",
    ReaderGroup.REDRIVE_OUTCOMES: "reads what each redrive came to",
}


# Safe to change at any time, so brought to the spec in place: the commands' broker time,
# and the settings that let retention and compaction act in time (erasure).
_ALIGNED = ("message.timestamp.type", "segment.ms", "max.compaction.lag.ms")

# Erasure (docs/decisions/0015-erasure.md): a deleted posting's text is gone from every topic
# we own within ERASURE_DAYS days. Each topic that may hold text has a time after which it
# forgets it, made to act by closing a segment at least every `segment.ms` (retention and
# compaction never touch the open segment):
# - jobpost.commands (a create's or replace's text): retention 1 day, a segment an hour;
# - jobpost.postings, jobpost.deliveries (a board's restated content), the sequencer's
#   changelog: compacted; a DELETED version carries no text and the tombstone after it makes
#   the older versions garbage once every reader had the 7 days of `min.compaction.lag.ms`
#   to see the delete; `max.compaction.lag.ms` (8 days) makes the cleaner act then, the
#   segment holding the delete closed within a day (on the partition's next write);
# - jobpost.<board>.redrive: requests carry no text (a release before this carried it): 7 days;
# - jobpost.<group>.dlq: the whole version, as it failed, for its redrive: 30 days, a segment a
#   day, so the last of it goes within 31 days. That bounds the whole.
ERASURE_DAYS = 31


def erasure_bound_ms(day_ms: int = DAY_MS) -> int:
    """How long after a delete a posting's text may still be in a topic we own."""
    return ERASURE_DAYS * day_ms


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)
    holds_text: bool = False  # may hold a posting's text: its times bound erasure, so they are ceilings too

    @property
    def cleanup_policy(self) -> str:
        return self.config.get("cleanup.policy", "delete")

    @property
    def aligned(self) -> dict[str, str]:
        """Settings an existing topic is brought to in place (safe to change at any time)."""
        return {k: v for k, v in self.config.items() if k in _ALIGNED}


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

    def dlq(self, group: Component) -> str:
        return f"{self.prefix}.{Component(group).value}.dlq"  # a group's name as text reads too

    def redrive(self, board: Destination) -> str:
        """Requests to attempt a board's dead letters again (`schemas.redrive`), keyed by
        posting id, co-partitioned with postings: the board's consumer reads them."""
        return f"{self.prefix}.{board.value}.redrive"

    @property
    def audit(self) -> str:
        """Who did what (`schemas.audit.AuditEvent`): every accepted write and operator
        action, kept a year."""
        return f"{self.prefix}.audit"

    @property
    def listing_events(self) -> str:
        """Changes of postings' states at the boards (`schemas.listing_events`), keyed by
        posting id on its partition number, kept 7 days: what webhooks tell employers."""
        return f"{self.prefix}.listing-events"

    @property
    def webhooks(self) -> str:
        """The registered webhook endpoints (`schemas.webhooks.WebhookEndpoint`), keyed by
        endpoint id, compacted."""
        return f"{self.prefix}.webhooks"

    @property
    def webhook_pending(self) -> str:
        """Events on their way to endpoints (`schemas.webhooks.WebhookDelivery`), keyed
        `{endpoint_id}/{event_id}` on the posting's partition number, compacted: what the
        dispatcher restores on assignment."""
        return f"{self.prefix}.webhook-pending"

    @property
    def webhook_replays(self) -> str:
        """Requests to deliver an endpoint's events again (`schemas.webhooks.WebhookReplay`),
        one per partition."""
        return f"{self.prefix}.webhook-replays"

    @property
    def board_status(self) -> str:
        """What each board consumer member holds of its destination now
        (`schemas.board_status.BoardStatus`), keyed `{board}/{member}`, compacted, one
        partition: the API's `GET /ops/boards` reads it whole."""
        return f"{self.prefix}.board-status"

    def group(self, component: Component) -> str:
        """The default group id of a component (a deployable's settings may name another)."""
        return component.group_id(self.prefix)

    def reader_group_prefix(self, purpose: ReaderGroup) -> str:
        return f"{self.prefix}-{purpose.value}-"

    def reader_group(self, purpose: ReaderGroup) -> str:
        """A fresh group id for one reader that commits nothing (see `ReaderGroup`)."""
        return f"{self.reader_group_prefix(purpose)}{uuid.uuid4().hex[:12]}"

    def specs(self, partitions: int, min_insync_replicas: int, day_ms: int = DAY_MS) -> list[TopicSpec]:
        """`day_ms`: the day the times that bound erasure are counted in (`ERASURE_DAYS`); a
        test shortens it (`KafkaSettings.erasure_day_ms`), a deployment never does."""
        n, day = partitions, day_ms
        isr = {"min.insync.replicas": str(min_insync_replicas)}
        compacted = {
            **isr,
            "cleanup.policy": "compact",
            "min.compaction.lag.ms": str(7 * day),
            "delete.retention.ms": str(7 * day),
            "max.compaction.lag.ms": str(8 * day),
            "segment.ms": str(day),
        }
        # A command's deadline is its append time plus its budget, and the sequencer learns
        # the time from what it reads and from its replies' acknowledgements: both stamped
        # by the broker, so no two hosts' clocks are ever compared.
        broker_time = {"cleanup.policy": "delete", "message.timestamp.type": "LogAppendTime"}
        return [
            TopicSpec(self.postings, n, compacted, holds_text=True),
            TopicSpec(
                self.commands,
                n,
                {**isr, **broker_time, "retention.ms": str(day), "segment.ms": str(day // 24)},
                holds_text=True,
            ),
            TopicSpec(self.replies, n, {**isr, **broker_time, "retention.ms": str(3600 * 1000)}),
            TopicSpec(self.deliveries, n, compacted, holds_text=True),
            TopicSpec(self.sequencer_state, n, compacted),
            TopicSpec(
                self.delivery_events, n, {**isr, "cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)}
            ),
            *(
                TopicSpec(self.dlq(d), n, {**isr, **kept_for(30 * day, day)}, holds_text=True)
                for d in Component
            ),
            TopicSpec(
                self.audit, n, {**isr, "cleanup.policy": "delete", "retention.ms": str(AUDIT_DAYS * DAY_MS)}
            ),
            *(
                TopicSpec(self.redrive(board), n, {**isr, **kept_for(7 * day, day)}, holds_text=True)
                for board in BOARDS
            ),
            *self._webhook_specs(n, isr),
            # Small and read whole: a stopped member's tombstone is forgotten within the hour.
            TopicSpec(
                self.board_status,
                1,
                {
                    **isr,
                    "cleanup.policy": "compact",
                    "delete.retention.ms": str(3600 * 1000),
                    "segment.ms": str(600 * 1000),
                },
            ),
        ]

    def _webhook_specs(self, n: int, isr: dict[str, str]) -> list[TopicSpec]:
        week = {**isr, "cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)}
        registrations = {
            **isr,
            "cleanup.policy": "compact",
            "min.compaction.lag.ms": str(7 * DAY_MS),
            "delete.retention.ms": str(7 * DAY_MS),
        }
        # Read from its beginning on every assignment: closed segments every 10 minutes, so
        # what was delivered is compacted away and a restore reads what waits and little else.
        pending = {
            **isr,
            "cleanup.policy": "compact",
            "delete.retention.ms": str(3600 * 1000),
            "segment.ms": str(600 * 1000),
        }
        return [
            TopicSpec(self.listing_events, n, week),
            TopicSpec(self.webhooks, 1, registrations),  # few, read whole by every reader
            TopicSpec(self.webhook_pending, n, pending),
            TopicSpec(self.webhook_replays, n, week),
        ]


def kept_for(retention_ms: int, segment_ms: int) -> dict[str, str]:
    """A topic that deletes what is older than `retention_ms`, closing a segment at least
    every `segment_ms` so that the last record goes at most that much later."""
    return {"cleanup.policy": "delete", "retention.ms": str(retention_ms), "segment.ms": str(segment_ms)}
