"""Settings of the producer_api deployable (the HTTP API; its embedded sequencer member has
`sequencer.config.SequencerSettings`)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from runtime.kafka import KafkaSettings
from runtime.stores import StateSettings
from schemas.enums import Destination
from schemas.topics import Component, Topics


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
    # 100 postings with the contract's longest description (25,000 characters) each fit.
    max_batch_body_bytes: int = Field(default=4 * 1024 * 1024, description="POST /postings:batch")
    title_max_chars: int = Field(default=200, ge=1, le=200)
    description_max_chars: int = Field(default=25_000, ge=0, le=25_000)
    notes_max_chars: int = Field(default=2_000, ge=0, le=2_000)
    elasticsearch_url: str = "http://127.0.0.1:9200"
    search_alias: str = "job-postings"
    sequencer_group_id: str | None = Field(default=None, description="default: <topic prefix>-sequencer")
    sandbox_url: str | None = Field(
        default=None, description="the sandbox whose fault switches /ops/boards shows (make run sets it)"
    )

    group_ids: dict[Destination, str] = Field(
        default_factory=dict,
        description='delivery groups whose id is not <prefix>-<component>, as JSON: {"linkedin": "..."}',
    )

    def delivery_groups(self) -> dict[Destination, str]:
        """Each destination's delivery group id (the lag panel asks for their offsets)."""
        topics = Topics(self.kafka.topic_prefix)
        return {d: self.group_ids.get(d) or topics.group(Component.delivering_to(d)) for d in Destination}

    @property
    def sequencer_group(self) -> str:
        return self.sequencer_group_id or Topics(self.kafka.topic_prefix).group(Component.SEQUENCER)

    def token_set(self) -> list[str]:
        return [t.strip() for t in self.tokens.get_secret_value().split(",") if t.strip()]
