"""Settings of the producer_api deployable (the HTTP API and the sequencer)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.kafka import KafkaSettings
from schemas.stores import StateSettings


class SequencerSettings(BaseSettings):
    """Environment prefix `JOBPOST_SEQUENCER_`."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_SEQUENCER_")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    group_id: str | None = Field(default=None, description="default: <topic prefix>-sequencer")
    instance_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    max_batch: int = Field(default=500, ge=1, description="commands per transaction at most")
    command_ttl_s: float = Field(
        default=60.0, description="commands older than this are dropped unapplied (the client had a 503)"
    )
    session_timeout_ms: int = Field(
        default=10_000, ge=6_000, description="how soon the group notices a member that died"
    )

    transaction_timeout_ms: int = Field(
        default=10_000, description="how long a crashed member's open transaction can hold readers back"
    )
    restore_timeout_s: float = Field(
        default=120.0, gt=0, description="longest read of a partition's log when it is assigned"
    )
    give_up_after_s: float = Field(
        default=300.0, gt=0, description="with no session up for this long the process exits (non-zero)"
    )

    @property
    def group(self) -> str:
        return self.group_id or f"{self.kafka.topic_prefix}-sequencer"

    def producer_config(self) -> dict[str, Any]:
        """The member's transactional producer."""
        return self.kafka.producer_config(
            **{
                "transactional.id": f"{self.group}-{self.instance_id}",
                "transaction.timeout.ms": self.transaction_timeout_ms,
                "linger.ms": 0,
                # A transaction begun right after a commit meets CONCURRENT_TRANSACTIONS
                # until the broker has written the markers; retrying after the default
                # 100 ms (growing to 1 s) made every transaction take ~90 ms. Measured
                # on a bare transactional loop: 70 ms -> 9 ms (5 ms) -> 6.5 ms (1 ms,
                # at most 5 ms).
                "retry.backoff.ms": 1,
                "retry.backoff.max.ms": 5,
            }
        )


class ApiSettings(BaseSettings):
    """Environment prefix `JOBPOST_API_` (so the tokens are `JOBPOST_API_TOKENS`)."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_API_")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    host: str = "127.0.0.1"
    port: int = 8000
    tokens: SecretStr = Field(default=SecretStr(""), description="accepted bearer tokens, comma-separated")
    embedded_sequencer: bool = Field(default=True, description="run a sequencer member in the API process")
    write_timeout_s: float = Field(default=10.0, gt=0, description="after this a write answers 503")
    strong_read_timeout_s: float = Field(default=5.0, gt=0)
    max_body_bytes: int = 1024 * 1024
    title_max_chars: int = Field(default=200, ge=1, le=200)
    description_max_chars: int = Field(default=25_000, ge=0, le=25_000)
    notes_max_chars: int = Field(default=2_000, ge=0, le=2_000)
    elasticsearch_url: str = "http://127.0.0.1:9200"
    search_alias: str = "job-postings"
    sequencer_group_id: str | None = Field(default=None, description="default: <topic prefix>-sequencer")
    sandbox_url: str | None = Field(
        default=None, description="the sandbox whose fault switches /ops/boards shows (make run sets it)"
    )

    @property
    def sequencer_group(self) -> str:
        return self.sequencer_group_id or f"{self.kafka.topic_prefix}-sequencer"

    def token_set(self) -> list[str]:
        return [t.strip() for t in self.tokens.get_secret_value().split(",") if t.strip()]
