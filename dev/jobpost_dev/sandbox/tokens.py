"""The boards' OAuth 2.0 client-credentials token endpoints and the tokens they issued.

Both boards take a form body `grant_type=client_credentials&client_id=…&client_secret=…`
(LinkedIn: POST https://www.linkedin.com/oauth/v2/accessToken, answering `access_token` and
`expires_in`, which its page shows as the string "1800":
learn.microsoft.com/linkedin/shared/authentication/client-credentials-flow; Indeed: POST
https://apis.indeed.com/oauth/v2/tokens, answering `access_token`, `token_type`, `scope`,
`expires_in` 3600: docs.indeed.com/authentication/auth-2-legged-oauth). A refused request
answers as RFC 6749 §5.2 says: 400 `invalid_request` / `unsupported_grant_type`, 401
`invalid_client`.

A token is valid for the lifetime the board had when it was issued, or the board's current
one if that is shorter, so a test that shortens `token_ttl_s` sees the consumers' tokens
run out without restarting them.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

# The client the sandbox accepts (consumers.boards.credentials names the same pair, and
# refuses to send it to a real board).
SANDBOX_CLIENT_ID = "jobpost-sandbox"
SANDBOX_CLIENT_SECRET = "sandbox-secret"
FORM = "application/x-www-form-urlencoded"


class TokenCheck(Enum):
    VALID = "valid"
    EXPIRED = "expired"
    UNKNOWN = "unknown"


@dataclass
class Tokens:
    """Tokens one board issued: token → (issued at, lifetime then (None: no end), the client
    it was issued to: the application a board knows its caller by)."""

    issued: dict[str, tuple[float, float | None, str]] = field(default_factory=dict)

    def issue(self, now: float, ttl_s: float | None, client_id: str) -> str:
        token = secrets.token_urlsafe(24)
        self.issued[token] = (now, ttl_s, client_id)
        return token

    def check(self, token: str, now: float, ttl_now: float | None) -> TokenCheck:
        found = self.issued.get(token)
        if found is None:
            return TokenCheck.UNKNOWN
        issued_at, ttl_then, _ = found
        lifetimes = [t for t in (ttl_then, ttl_now) if t is not None]
        if lifetimes and now >= issued_at + min(lifetimes):
            return TokenCheck.EXPIRED
        return TokenCheck.VALID

    def client(self, token: str) -> str:
        return self.issued[token][2]

    def rebase(self, now: float) -> None:
        """After the clock went back to real time (a reset): no token issued in the moved
        time outlives its lifetime from now."""
        self.issued = {t: (min(at, now), ttl, client) for t, (at, ttl, client) in self.issued.items()}


def bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def token_request(content_type: str | None, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """Whether a token request may have a token: (200, {}) or the OAuth error answer."""
    if (content_type or "").split(";")[0].strip().lower() != FORM:
        return 400, _error("invalid_request", f"the body must be {FORM}")
    if form.get("grant_type") != "client_credentials":
        return 400, _error("unsupported_grant_type", "grant_type must be client_credentials")
    if not (form.get("client_id") and form.get("client_secret")):
        return 400, _error("invalid_request", "client_id and client_secret are required")
    known = hmac.compare_digest(form["client_id"], SANDBOX_CLIENT_ID) and hmac.compare_digest(
        form["client_secret"], SANDBOX_CLIENT_SECRET
    )
    if not known:
        return 401, _error("invalid_client", "Client authentication failed")
    return 200, {}


def _error(code: str, description: str) -> dict[str, str]:
    return {"error": code, "error_description": description}
