"""Settings of the webhooks dispatcher (`jobpost webhooks`)."""

from __future__ import annotations

import ssl
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from runtime.http import client_tls
from runtime.kafka import KafkaSettings
from runtime.settings_file import Settings
from runtime.webhook_secrets import WebhookSecretsSettings
from schemas.topics import Component, Topics

# The Standard Webhooks specification's example schedule after the first attempt: 5 s,
# 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h (about three days in all).
SPEC_SCHEDULE_S = (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 50400.0, 72000.0, 86400.0)


class DispatcherSettings(Settings):
    """Environment prefix `JOBPOST_WEBHOOKS_` (e.g. `JOBPOST_WEBHOOKS_RETRY_SCHEDULE_S=[1,2,4]`);
    the secrets' key is `JOBPOST_WEBHOOK_SECRETS_KEY`, shared with the API."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_WEBHOOKS_", env_nested_delimiter="__")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    secrets: WebhookSecretsSettings = Field(default_factory=WebhookSecretsSettings)
    group_id: str | None = Field(default=None, description="default: <topic prefix>-webhooks")
    timeout_s: float = Field(default=15.0, gt=0, description="one delivery's HTTP request, all of it")
    retry_schedule_s: tuple[float, ...] = Field(
        default=SPEC_SCHEDULE_S,
        description="the waits before each attempt after the first; past the last, the event goes "
        "to the endpoint's dead letters",
    )
    retry_jitter: float = Field(default=0.1, ge=0, lt=1, description="each wait is moved by up to this share")
    retry_after_max_s: float = Field(
        default=86400.0, gt=0, description="the longest wait an endpoint's Retry-After is honoured with"
    )
    max_in_flight: int = Field(default=256, ge=1, description="requests in flight at once, all endpoints")
    max_in_flight_per_endpoint: int = Field(
        default=8, ge=1, description="requests in flight at once to one endpoint (one per posting)"
    )
    ca_bundle: Path | None = Field(default=None, description="PEM of the CAs endpoints are verified with")
    session_timeout_ms: int = Field(
        default=10_000, ge=6_000, description="how soon a dead member's share moves"
    )
    commit_interval_s: float = Field(
        default=1.0, gt=0, description="how often finished offsets are committed"
    )
    registrations_check_s: float = Field(
        default=0.1,
        gt=0,
        description="while an event waits, how often the registrations' end is asked for (new endpoints)",
    )
    metrics_port: int = Field(default=0, ge=0, description="serve /metrics on <metrics_host>:<port> (0: off)")
    metrics_host: str = Field(default="127.0.0.1", description="0.0.0.0 in a container")

    @field_validator("retry_schedule_s")
    @classmethod
    def _waits(cls, schedule: tuple[float, ...]) -> tuple[float, ...]:
        if any(wait < 0 for wait in schedule):
            raise ValueError("every wait of the schedule is 0 or more seconds")
        return schedule

    @property
    def group(self) -> str:
        return self.group_id or Topics(self.kafka.topic_prefix).group(Component.WEBHOOKS)

    def tls(self) -> ssl.SSLContext:
        return client_tls(self.ca_bundle)
