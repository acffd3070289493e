"""Settings of the sequencer deployable (`jobpost sequencer`, or embedded in the API)."""

from __future__ import annotations

import uuid

from pydantic import Field, PrivateAttr
from pydantic_settings import SettingsConfigDict

from runtime.kafka import KafkaSettings
from runtime.settings_file import Settings
from runtime.stores import StateSettings
from schemas.topics import Component, Topics


class SequencerSettings(Settings):
    """Environment prefix `JOBPOST_SEQUENCER_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_SEQUENCER_")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    group_id: str | None = Field(default=None, description="default: <topic prefix>-sequencer")
    # Given, the member's name in its group (static membership) and in its transactional
    # id: a member restarted under the same name takes its partitions back at once and
    # aborts its predecessor's open transaction (make run names each API replica's). A
    # static member that stops keeps its partitions until its session timeout, so only a
    # member that comes back under its name should have one. Unique among live members.
    instance_id: str | None = Field(default=None, description="none: a dynamic member, a name per process")
    _process_name: str = PrivateAttr(default_factory=lambda: uuid.uuid4().hex[:12])
    max_batch: int = Field(default=500, ge=1, description="commands per transaction at most")
    # Longer than a replica's restart under `make run` (~6 s measured): a restarted member
    # takes its partitions back before the group gives them away.
    session_timeout_ms: int = Field(
        default=10_000, ge=6_000, description="how soon the group notices a member that died"
    )
    # Also how long a record may wait for a broker that stopped answering before the
    # transaction fails (librdkafka caps message.timeout.ms at it).
    transaction_timeout_ms: int = Field(
        default=6_000, description="how long a crashed member's open transaction can hold readers back"
    )
    restore_timeout_s: float = Field(
        default=120.0, gt=0, description="longest read of a partition's log when it is assigned"
    )
    give_up_after_s: float = Field(
        default=300.0, gt=0, description="with no session up for this long the process exits (non-zero)"
    )
    # A transaction takes milliseconds, and one that waits for a partition's new leader a
    # few seconds; one open longer is a Kafka client call that ignores its own timeout
    # (confluentinc/librdkafka#5456, #5511: a full chaos run had one member's commit hang
    # for as long as the killed broker stayed away, its partitions taking no write). The
    # member then abandons the session and starts a new one, which fences it: safe however
    # early, so the bound is what a failover needs, not the transaction timeout.
    stuck_after_s: float = Field(
        default=3.0, gt=0, description="a transaction open this long is stuck: its session is replaced"
    )

    @property
    def member_name(self) -> str:
        """In the member's transactional id: the instance id, else the process's own."""
        return self.instance_id or self._process_name

    @property
    def group(self) -> str:
        return self.group_id or Topics(self.kafka.topic_prefix).group(Component.SEQUENCER)

    @property
    def transactional_id(self) -> str:
        """The member's transactional producer's: one per member name, so a member restarted
        under its name fences its predecessor and aborts its open transaction."""
        return f"{self.group}-{self.member_name}"

    @property
    def assigned_eagerly(self) -> bool:
        """A static member (an instance id given) is assigned eagerly: cooperative assignment
        withholds a moving partition for a second rebalance that its previous owner starts
        once it has let it go; a session that fails in between is replaced under the same
        instance id without a rebalance, so nobody starts it and the partition stays
        unassigned (`make chaos` left three of six partitions without a sequencer for the
        rest of the run). A dynamic member's replacement is a new member, which always
        rebalances: it stays cooperative."""
        return self.instance_id is not None
