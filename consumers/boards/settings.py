"""What both boards' settings share: where the board is, how the consumer gets its access
token, where the employer registry is, and the check that keeps sandbox credentials away
from a real board."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr

# The client the sandbox accepts (jobpost_dev.sandbox.tokens names the same pair).
SANDBOX_CLIENT_ID = "jobpost-sandbox"
SANDBOX_CLIENT_SECRET = "sandbox-secret"
OLD_SANDBOX_TOKEN = "sandbox"  # the static token the consumers sent before OAuth
LOOPBACK = ["127.0.0.1", "localhost", "::1"]


class UnsafeBoardSettings(ValueError):
    """A consumer pointed at a real board with the sandbox's credentials or none."""


class BoardSettings(BaseModel):
    """Credentials: OAuth 2.0 client credentials by default (`client_id`, `client_secret`,
    `token_url`), or a static `access_token` (tests, a proxy that injects credentials)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    ENV: ClassVar[str] = ""  # the settings' environment prefix, for messages
    TOKEN_PATH: ClassVar[str] = ""  # where the sandbox serves this board's token endpoint

    base_url: str
    token_url: str | None = Field(default=None, description="default: the sandbox's, under base_url")
    client_id: str | None = SANDBOX_CLIENT_ID
    """OAuth 2.0 client id (default: the sandbox's)"""
    client_secret: SecretStr | None = SecretStr(SANDBOX_CLIENT_SECRET)
    """OAuth 2.0 client secret (default: the sandbox's)"""
    scope: str | None = Field(default=None, description="asked for with the token, if the board wants one")
    access_token: SecretStr | None = Field(default=None, description="a static token instead of OAuth")
    timeout_s: float = Field(default=5.0, gt=0)
    """a board call's timeout"""
    ca_bundle: Path | None = Field(
        default=None, description="trust only these CAs for https (a PEM file; runtime.http.client_tls)"
    )
    employers_file: Path | None = Field(default=None, description="default: the sandbox's employer `default`")
    sandbox_hosts: list[str] = Field(
        default_factory=lambda: list(LOOPBACK), description="hosts that are sandboxes, not real boards"
    )
    records_per_day: int | None = Field(
        default=None, ge=1, description="records the board takes a day, for the whole group (none: no cap)"
    )
    requests_per_day: int | None = Field(
        default=None,
        ge=1,
        description="calls sending jobs the board takes a day, for the whole group (none: no cap)",
    )
    task_status_calls_per_day: int | None = Field(
        default=None,
        ge=1,
        description="task-status calls the board takes a day, for the whole group (none: no cap)",
    )
    daily_reset_utc: str = Field(
        default="00:00",
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        description="when the board's daily caps start again, HH:MM UTC",
    )
    quota_day_s: float = Field(
        default=86_400.0,
        gt=0,
        description="how long the daily caps' day lasts (86,400 s; a test may scale it down)",
    )

    @property
    def token_endpoint(self) -> str:
        return self.token_url or f"{self.base_url.rstrip('/')}{self.TOKEN_PATH}"

    def is_sandbox(self, url: str | None = None) -> bool:
        return (urlsplit(url or self.base_url).hostname or "") in self.sandbox_hosts

    def check_credentials(self) -> None:
        """Refuse, saying why, to deliver to a real board (a host not in `sandbox_hosts`)
        with the sandbox's credentials or none, or with the sandbox's employer registry.
        Call it before the consumer starts."""
        if self.is_sandbox():
            return
        env = self.ENV
        reasons = []
        if self.access_token is not None:
            if self.access_token.get_secret_value() in ("", OLD_SANDBOX_TOKEN):
                reasons.append(f"{env}ACCESS_TOKEN is the sandbox's")
        else:
            secret = self.client_secret.get_secret_value() if self.client_secret else ""
            if self.client_id in (None, "", SANDBOX_CLIENT_ID) or secret in ("", SANDBOX_CLIENT_SECRET):
                reasons.append(f"{env}CLIENT_ID / {env}CLIENT_SECRET are missing or the sandbox's")
            if self.token_url is None:
                reasons.append(f"{env}TOKEN_URL is not set (the default is the sandbox's path)")
            elif self.is_sandbox(self.token_url):
                reasons.append(f"{env}TOKEN_URL {self.token_url} is a sandbox")
        if self.employers_file is None:
            reasons.append(f"{env}EMPLOYERS_FILE is not set (the built-in registry is the sandbox's)")
        if reasons:
            raise UnsafeBoardSettings(f"{self.base_url} is a real board: " + "; ".join(reasons))
