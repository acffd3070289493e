"""Settings of the producer_api deployable (the HTTP API; its embedded sequencer member has
`sequencer.config.SequencerSettings`)."""

from __future__ import annotations

import ssl
from pathlib import Path

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from producer_api.oidc import OidcSettings
from runtime.kafka import KafkaSettings
from runtime.search_server import ElasticsearchSettings, settings_of
from runtime.settings_file import Settings
from runtime.stores import StateSettings
from runtime.webhook_secrets import WebhookSecretsSettings
from schemas.enums import Destination
from schemas.topics import Component, Topics


class ApiSettings(Settings):
    """Environment prefix `JOBPOST_API_` (so the tokens are `JOBPOST_API_TOKENS`)."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_API_")

    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    host: str = "127.0.0.1"
    """where the API listens"""
    port: int = 8000
    """the API's port"""
    tokens: SecretStr = Field(
        default=SecretStr(""),
        description="development tokens (every scope, employer default), comma-separated",
    )
    credentials_file: Path | None = Field(
        default=None,
        description="JSON of credentials (name, token_sha256, employer, scopes), re-read on change",
    )
    credentials_check_s: float = Field(
        default=1.0, gt=0, description="how often the file's mtime is looked at"
    )
    oidc: OidcSettings = Field(default_factory=OidcSettings)
    rate_limit: str | None = Field(
        default="1000/second",
        description='requests per credential, e.g. "100/second" (limits\' notation); none: off',
    )
    max_concurrent_requests: int = Field(default=256, ge=1, description="in flight at once; past it 503")
    strong_reads_max: int = Field(default=32, ge=1, description="?consistency=strong reads waiting at once")
    searches_max: int = Field(default=8, ge=1, description="searches at the search server at once")
    timeout_keep_alive_s: int = Field(default=5, ge=1, description="an idle keep-alive connection is closed")
    docs: bool = Field(default=True, description="serve /docs, /redoc and /openapi.json")
    internal_host: str = "127.0.0.1"
    """where internal_port listens"""
    internal_port: int | None = Field(
        default=None,
        description="serve /metrics, /readyz and the docs on this port only (none: on the API's)",
    )
    embedded_sequencer: bool = Field(default=True, description="run a sequencer member in the API process")
    write_timeout_s: float = Field(
        default=10.0, gt=0, description="a write is answered within this: applied, 503 (never applied) or 504"
    )
    verdict_margin_s: float = Field(
        default=2.0,
        gt=0,
        description="of the write timeout, what is kept for the sequencer's verdict to come back: a "
        "command's budget (how long after reaching Kafka it may still be applied) is the rest",
    )
    strong_read_timeout_s: float = Field(default=5.0, gt=0)
    """a ?consistency=strong read is answered within this"""
    max_body_bytes: int = 1024 * 1024
    """larger bodies answer 413"""
    body_read_timeout_s: float = Field(
        default=10.0, gt=0, description="a request's body not received within this is answered 408"
    )
    # 100 postings with the contract's longest description (25,000 characters) each fit.
    max_batch_body_bytes: int = Field(default=4 * 1024 * 1024, description="POST /postings:batch")
    employers_file: Path | None = Field(
        default=None,
        description="the employer registry (who each employer is on each board; the consumers' file): "
        "a posting for a board its employer has no identity on is refused. Default: the sandbox's, "
        "the employer `default` only",
    )
    title_max_chars: int = Field(default=200, ge=1, le=200)
    """may only lower the contract's limit"""
    description_max_chars: int = Field(default=25_000, ge=0, le=25_000)
    """may only lower the contract's limit"""
    notes_max_chars: int = Field(default=2_000, ge=0, le=2_000)
    """may only lower the contract's limit"""
    # JOBPOST_API_ELASTICSEARCH_URL, _API_KEY, _USERNAME, _PASSWORD, _CA_BUNDLE
    elasticsearch: ElasticsearchSettings = Field(default_factory=lambda: settings_of("api"))
    search_alias: str = "job-postings"
    """the alias searches read"""
    sequencer_group_id: str | None = Field(default=None, description="default: <topic prefix>-sequencer")
    snapshot_peers: str = Field(
        default="",
        description="live replicas (URLs, comma-separated; a load balancer's will do) a replica "
        "with no local state copies its stores from before it reads the rest from Kafka",
    )
    snapshot_token: SecretStr = Field(
        default=SecretStr(""),
        description="a token with the scope ops:snapshot for the peers (default: the first of tokens)",
    )
    snapshot_ca_bundle: Path | None = Field(
        default=None,
        description="CA certificates a peer's (https) certificate is checked against (none: the system's); "
        "set, every peer must be https",
    )
    tls_certfile: Path | None = Field(
        default=None, description="serve HTTPS with this certificate chain (PEM), on both ports"
    )
    tls_keyfile: Path | None = Field(default=None, description="the private key of tls_certfile (PEM)")
    sandbox_url: str | None = Field(
        default=None, description="the sandbox whose fault switches /ops/boards shows (make run sets it)"
    )

    webhook_local_http: bool = Field(
        default=False,
        description="accept webhook URLs on this machine and private networks, plain http to this "
        "machine included (development; make run sets it)",
    )
    webhook_secret_overlap_s: float = Field(
        default=24 * 3600.0, gt=0, description="after a rotation, how long the previous secret signs too"
    )
    webhook_secrets: WebhookSecretsSettings = Field(default_factory=WebhookSecretsSettings)

    group_ids: dict[Destination, str] = Field(
        default_factory=dict,
        description='delivery groups whose id is not <prefix>-<component>, as JSON: {"linkedin": "..."}',
    )

    @model_validator(mode="after")
    def _budget_left(self) -> ApiSettings:
        if self.verdict_margin_s >= self.write_timeout_s:
            raise ValueError("verdict_margin_s must be shorter than write_timeout_s")
        return self

    @model_validator(mode="after")
    def _tls(self) -> ApiSettings:
        if (self.tls_certfile is None) != (self.tls_keyfile is None):
            raise ValueError("JOBPOST_API_TLS_CERTFILE and JOBPOST_API_TLS_KEYFILE go together")
        if self.tls_certfile is not None or self.snapshot_ca_bundle is not None:
            # Where TLS is configured, a replica's stores (every employer's postings) never
            # travel in the clear.
            plain = [peer for peer in self.peers() if not peer.lower().startswith("https://")]
            if plain:
                raise ValueError(f"with TLS configured, JOBPOST_API_SNAPSHOT_PEERS must be https: {plain}")
        return self

    def peer_verify(self) -> ssl.SSLContext | bool:
        """How a peer's certificate is checked: against the CA bundle, or the system's CAs."""
        if self.snapshot_ca_bundle is None:
            return True
        return ssl.create_default_context(cafile=str(self.snapshot_ca_bundle))

    @property
    def command_budget_s(self) -> float:
        """How long after its append time a command may be applied; past it, never."""
        return self.write_timeout_s - self.verdict_margin_s

    def delivery_groups(self) -> dict[Destination, str]:
        """Each destination's delivery group id (the lag panel asks for their offsets)."""
        topics = Topics(self.kafka.topic_prefix)
        return {d: self.group_ids.get(d) or topics.group(Component.delivering_to(d)) for d in Destination}

    @property
    def sequencer_group(self) -> str:
        return self.sequencer_group_id or Topics(self.kafka.topic_prefix).group(Component.SEQUENCER)

    def peers(self) -> list[str]:
        return [url.strip() for url in self.snapshot_peers.split(",") if url.strip()]

    def peer_token(self) -> str:
        return self.snapshot_token.get_secret_value() or next(iter(self.token_set()), "")

    def token_set(self) -> list[str]:
        return [t.strip() for t in self.tokens.get_secret_value().split(",") if t.strip()]

    def any_credentials(self) -> bool:
        """Whether any token can be accepted (an API that accepts none refuses everything)."""
        return bool(self.token_set()) or self.credentials_file is not None or self.oidc.enabled
