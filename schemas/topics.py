"""The topics of DESIGN.md and their settings, and the consumer groups (`Component`).

Creating and checking them against a cluster is `runtime.topics`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from schemas.enums import Destination

DAY_MS = 24 * 3600 * 1000


BOARDS = (Destination.LINKEDIN, Destination.INDEED)  # the destinations that are job boards


class Component(StrEnum):
    """The consumer groups of the system. Each has the group id `<prefix>-<name>` and a
    dead-letter topic `<prefix>.<name>.dlq`; the one place either name is made."""

    SEQUENCER = "sequencer"
    LINKEDIN = Destination.LINKEDIN.value  # a board's consumers are named after it
    INDEED = Destination.INDEED.value
    SEARCH_INDEXER = "search-indexer"

    def group_id(self, prefix: str) -> str:
        return f"{prefix}-{self.value}"

    @classmethod
    def delivering_to(cls, destination: Destination) -> Component:
        """The group that delivers to a destination (search: the indexer)."""
        return cls.SEARCH_INDEXER if destination == Destination.SEARCH else cls(destination.value)


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

    def dlq(self, group: Component) -> str:
        return f"{self.prefix}.{Component(group).value}.dlq"  # a group's name as text reads too

    def redrive(self, board: Destination) -> str:
        """Requests to attempt a board's dead letters again (`schemas.redrive`), keyed by
        posting id, co-partitioned with postings: the board's consumer reads them."""
        return f"{self.prefix}.{board.value}.redrive"

    def group(self, component: Component) -> str:
        """The default group id of a component (a deployable's settings may name another)."""
        return component.group_id(self.prefix)

    def specs(self, partitions: int, min_insync_replicas: int) -> list[TopicSpec]:
        n = partitions
        isr = {"min.insync.replicas": str(min_insync_replicas)}
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
                for d in Component
            ),
            *(
                TopicSpec(
                    self.redrive(board),
                    n,
                    {**isr, "cleanup.policy": "delete", "retention.ms": str(7 * DAY_MS)},
                )
                for board in BOARDS
            ),
        ]
