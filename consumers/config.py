"""Settings of the delivery consumers (one process per destination)."""

from __future__ import annotations

import ssl

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from consumers.boards.indeed import IndeedSettings
from consumers.boards.linkedin import LinkedInSettings
from consumers.destination.circuit import CircuitSettings
from consumers.job_rules import JobTerms
from consumers.retry import RetrySettings
from runtime.http import client_tls
from runtime.kafka import KafkaSettings
from runtime.settings_file import Settings
from runtime.stores import StateSettings
from schemas.model import Destination
from schemas.topics import BOARDS, Component, Topics


class ConsumerSettings(Settings):
    """Environment prefix `JOBPOST_CONSUMER_`; nested settings use `__`
    (e.g. `JOBPOST_CONSUMER_RETRY__FIRST_WAIT_S`, `JOBPOST_CONSUMER_LINKEDIN__BASE_URL`)."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_CONSUMER_", env_nested_delimiter="__")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    destination: Destination = Field(default=Destination.LINKEDIN, description="linkedin or indeed")
    group_id: str | None = Field(default=None, description="default: <topic prefix>-<destination>")
    max_in_flight: int = Field(
        default=32, ge=1, description="board calls in flight at once (a call carries a batch)"
    )
    records_per_minute: float | None = Field(
        default=None,
        gt=0,
        description="the board's records budget for the whole group (none: found by trying)",
    )
    requests_per_minute: float | None = Field(
        default=None,
        gt=0,
        description="the board's requests budget for the whole group (none: found by trying)",
    )
    batch_wait_ms: float = Field(default=5.0, ge=0, description="how long a call waits to fill its batch")
    task_poll_interval_s: float = Field(
        default=2.0, gt=0, description="how often a board task is asked about"
    )
    task_timeout_s: float = Field(
        default=900.0, gt=0, description="a task still in progress after this is retried like a failed call"
    )
    deliver_every_version: bool = Field(
        default=False,
        description="send every version of a posting, however far the board falls behind (default: "
        "versions that queued while the board was confirming an earlier one give way to the newest)",
    )
    conflate: bool | None = Field(
        default=None,
        description="deprecated, the opposite of deliver_every_version: true conflates at the board's pace, "
        "false delivers every version",
    )
    listing_poll_interval_s: float = Field(
        default=60.0, gt=0, description="how often the board's status of a job not yet live is read back"
    )
    live_check_interval_s: float = Field(
        default=900.0,
        gt=0,
        description="how often a live job's status is read back: a job the board closes on its own shows "
        "within this",
    )
    renew_ahead_s: float = Field(
        default=7 * 86_400.0,
        gt=0,
        description="a job the board ends after a lifetime (LinkedIn) is renewed this long before its end",
    )
    circuit: CircuitSettings = Field(default_factory=CircuitSettings)
    status_interval_s: float = Field(
        default=5.0,
        gt=0,
        description="how often this member publishes its budgets, their use and its circuit to "
        "jobpost.board-status (GET /ops/boards; also at once when the circuit changes)",
    )
    max_buffered: int = Field(default=2000, ge=1, description="records held before partitions pause")
    session_timeout_ms: int = Field(
        default=10_000, ge=6_000, description="how soon a dead member's postings move"
    )
    metrics_port: int = Field(default=0, ge=0, description="serve /metrics on <metrics_host>:<port> (0: off)")
    metrics_host: str = Field(default="127.0.0.1", description="0.0.0.0 in a container")
    commit_interval_s: float = Field(default=1.0, gt=0)
    """how often a consumer commits its delivered offsets"""
    retry: RetrySettings = Field(default_factory=RetrySettings)
    linkedin: LinkedInSettings = Field(default_factory=LinkedInSettings)
    indeed: IndeedSettings = Field(default_factory=IndeedSettings)

    def job_terms(self) -> JobTerms:
        """How this destination's jobs are kept (`consumers.job_rules`)."""
        linkedin = self.destination == Destination.LINKEDIN
        return JobTerms(
            restates=linkedin,
            lifetime_ms=round(self.linkedin.job_lifetime_s * 1000) if linkedin else None,
            renewal_ms=round(self.linkedin.renewal_s * 1000) if linkedin else None,
            renew_ahead_ms=round(self.renew_ahead_s * 1000),
            check_received_ms=round(self.listing_poll_interval_s * 1000),
            check_live_ms=round(self.live_check_interval_s * 1000),
        )

    @property
    def component(self) -> Component:
        """The board's consumer group: its dead-letter topic `jobpost.<board>.dlq`, whatever
        `group_id` says."""
        return Component(self.destination.value)

    def board_tls(self) -> ssl.SSLContext:
        """The TLS the HTTP session to this consumer's board verifies it with."""
        board = self.linkedin if self.destination == Destination.LINKEDIN else self.indeed
        return client_tls(board.ca_bundle)

    @property
    def group(self) -> str:
        return self.group_id or Topics(self.kafka.topic_prefix).group(self.component)

    @model_validator(mode="after")
    def _conflate_is_the_old_name(self) -> ConsumerSettings:
        """`conflate` (before deliver_every_version existed) still says the same thing."""
        if self.conflate is None:
            return self
        if "deliver_every_version" in self.model_fields_set and self.deliver_every_version == self.conflate:
            raise ValueError("conflate and deliver_every_version contradict each other: set only the latter")
        self.deliver_every_version = not self.conflate
        return self

    @property
    def conflates(self) -> bool:
        """Whether a version queued while the board confirmed an earlier one gives way to a
        newer one (`consumers.rules.conflated`)."""
        return not self.deliver_every_version

    @field_validator("destination")
    @classmethod
    def _a_board(cls, destination: Destination) -> Destination:
        if destination not in BOARDS:
            raise ValueError(f"a delivery consumer delivers to {' or '.join(BOARDS)}, not {destination}")
        return destination
