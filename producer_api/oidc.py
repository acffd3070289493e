"""OIDC bearer tokens: a JWT signed by a key of the issuer's JWKS, for this API's audience.

PyJWT verifies the signature (with the key the token's `kid` names in the JWKS, fetched
and cached by its `PyJWKClient`), the expiry, the issuer and the audience; the credential's
name, employer and scopes come from claims whose names are settings. A token that fails
any check is no token (401); one without the scope a route needs is refused there (403).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import jwt
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from producer_api.callers import Caller, Scope

log = logging.getLogger(__name__)


class OidcSettings(BaseSettings):
    """Environment prefix `JOBPOST_API_OIDC_`; OIDC is on when `jwks_url` is set."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_API_OIDC_")

    jwks_url: str | None = Field(default=None, description="the issuer's JWKS (jwks_uri of its discovery)")
    issuer: str | None = Field(default=None, description="the `iss` every token must carry")
    audience: str | None = Field(default=None, description="the `aud` every token must include")
    algorithms: list[str] = Field(default=["RS256", "ES256"], description="signature algorithms accepted")
    name_claim: str = Field(default="sub", description="the credential's name (recorded as the actor)")
    employer_claim: str = Field(default="employer", description="the employer the token acts for")
    scopes_claim: str = Field(default="scope", description="space-separated scopes, or a list of them")
    leeway_s: float = Field(default=30, ge=0, description="clock skew allowed on exp/nbf/iat")

    @property
    def enabled(self) -> bool:
        return self.jwks_url is not None


class OidcTokens:
    def __init__(self, settings: OidcSettings) -> None:
        if not (settings.jwks_url and settings.issuer and settings.audience):
            raise ValueError("OIDC needs JOBPOST_API_OIDC_JWKS_URL, _ISSUER and _AUDIENCE together")
        self.settings = settings
        # Keys are cached, and an unknown `kid` refetches the set (at most every 30 s).
        self.keys = jwt.PyJWKClient(settings.jwks_url, cache_keys=True, lifespan=300, timeout=5)

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return token.count(".") == 2

    async def caller(self, token: str) -> Caller | None:
        """The caller a valid token stands for; None for any token that is not."""
        try:
            # The JWKS may have to be fetched (blocking I/O): off the event loop.
            key = await asyncio.to_thread(self.keys.get_signing_key_from_jwt, token)
            claims = jwt.decode(
                token,
                key.key,
                algorithms=self.settings.algorithms,
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=self.settings.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWKClientConnectionError:
            log.warning("the JWKS at %s could not be fetched", self.settings.jwks_url)
            return None
        except jwt.PyJWTError as exc:
            log.info("bearer JWT refused: %s", type(exc).__name__)
            return None
        return self._caller(claims)

    def _caller(self, claims: dict[str, Any]) -> Caller | None:
        name, employer = claims.get(self.settings.name_claim), claims.get(self.settings.employer_claim)
        if not isinstance(name, str) or not name or not isinstance(employer, str) or not employer:
            log.info(
                "bearer JWT refused: no %s or %s claim",
                self.settings.name_claim,
                self.settings.employer_claim,
            )
            return None
        scopes = _scopes(claims.get(self.settings.scopes_claim))
        return Caller(name, employer, Scope.OPS in scopes, scopes)


def _scopes(claim: object) -> frozenset[Scope]:
    """This API's scopes among the claim's (others, an issuer's own, are ignored)."""
    named = claim.split() if isinstance(claim, str) else claim if isinstance(claim, list) else []
    known = {s.value for s in Scope}
    return frozenset(Scope(s) for s in named if isinstance(s, str) and s in known)
