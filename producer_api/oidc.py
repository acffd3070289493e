"""OIDC bearer tokens: a JWT signed by a key of the issuer's JWKS, for this API's audience.

PyJWT verifies the signature (with the key the token's `kid` names in the JWKS), the
expiry, the issuer and the audience; the credential's employer and scopes come from claims
whose names are settings, its name is the subject namespaced by the issuer
(`oidc:<issuer>#<sub>`), so it never equals a file credential's name (those are plain
identifiers): rate buckets and audit actors stay apart.

The JWKS is cached for `jwks_refresh_s` and then fetched again: a key the issuer removed
is refused within that time (an unknown `kid` refetches it at once, at most every 30 s).
Only asymmetric algorithms are accepted, and only a JWKS over https unless a development
setting says otherwise. A token that fails any check, an algorithm that does not fit the
key included, is no token: `Unauthenticated` with a reason the caller counts (401).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import jwt
from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from producer_api.callers import Caller, Scope, Unauthenticated, identifier
from runtime.settings_file import Settings

log = logging.getLogger(__name__)

# Signatures with a public key only: a shared secret (HS*) would let whoever verifies
# tokens also make them, and `none` is no signature.
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES256K", "ES384", "ES512", "EdDSA"}
)
_UNKNOWN_KID_COOLDOWN_S = 30.0
_MAX_SUBJECT = 200


class OidcSettings(Settings):
    """Environment prefix `JOBPOST_API_OIDC_`; OIDC is on when `jwks_url` is set."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_API_OIDC_")

    jwks_url: str | None = Field(
        default=None, description="the issuer's JWKS (jwks_uri of its discovery), https"
    )
    issuer: str | None = Field(default=None, description="the `iss` every token must carry")
    audience: str | None = Field(default=None, description="the `aud` every token must include")
    algorithms: list[str] = Field(
        default=["RS256", "ES256"], description=f"signature algorithms accepted, among {sorted(ASYMMETRIC)}"
    )
    name_claim: str = Field(default="sub", description="the subject; the credential is oidc:<issuer>#<it>")
    employer_claim: str = Field(default="employer", description="the employer the token acts for")
    scopes_claim: str = Field(default="scope", description="space-separated scopes, or a list of them")
    leeway_s: float = Field(default=30, ge=0, description="clock skew allowed on exp/nbf/iat")
    jwks_refresh_s: float = Field(
        default=300,
        gt=0,
        description="the JWKS is fetched again after this: a removed key is refused within it",
    )
    jwks_ca_bundle: Path | None = Field(
        default=None, description="CA certificates the JWKS server's is checked against (none: the system's)"
    )
    allow_http_jwks: bool = Field(
        default=False, description="development only: accept a JWKS URL over plain http"
    )

    @field_validator("algorithms")
    @classmethod
    def _asymmetric(cls, algorithms: list[str]) -> list[str]:
        refused = [a for a in algorithms if a not in ASYMMETRIC]
        if refused or not algorithms:
            raise ValueError(f"algorithms {refused or '(none)'} refused: only {sorted(ASYMMETRIC)}")
        return algorithms

    @model_validator(mode="after")
    def _https(self) -> OidcSettings:
        if self.jwks_url is not None:
            scheme = urlparse(self.jwks_url).scheme.lower()
            if scheme != "https" and not (scheme == "http" and self.allow_http_jwks):
                raise ValueError(
                    f"JOBPOST_API_OIDC_JWKS_URL must be https (got {scheme or 'no'} scheme); "
                    "http only with JOBPOST_API_OIDC_ALLOW_HTTP_JWKS=true, for development"
                )
        return self

    @property
    def enabled(self) -> bool:
        return self.jwks_url is not None


class OidcTokens:
    def __init__(self, settings: OidcSettings) -> None:
        if not (settings.jwks_url and settings.issuer and settings.audience):
            raise ValueError("OIDC needs JOBPOST_API_OIDC_JWKS_URL, _ISSUER and _AUDIENCE together")
        self.settings = settings
        self.issuer = settings.issuer
        context = None
        if settings.jwks_ca_bundle is not None:
            context = ssl.create_default_context(cafile=str(settings.jwks_ca_bundle))
        # The key set is cached for the refresh interval, never a key on its own (PyJWKClient's
        # per-key cache has no expiry: a removed key would stay trusted).
        self.keys = jwt.PyJWKClient(
            settings.jwks_url,
            cache_keys=False,
            cache_jwk_set=True,
            lifespan=settings.jwks_refresh_s,
            timeout=5,
            ssl_context=context,
            cooldown_duration=min(_UNKNOWN_KID_COOLDOWN_S, settings.jwks_refresh_s),
        )

    @staticmethod
    def looks_like_jwt(token: str) -> bool:
        return token.count(".") == 2

    async def caller(self, token: str) -> Caller:
        """The caller a valid token stands for; `Unauthenticated` for any token that is not."""
        try:
            # The JWKS may have to be fetched (blocking I/O): off the event loop.
            key = await asyncio.to_thread(self.keys.get_signing_key_from_jwt, token)
            # The PyJWK, not its bare key: PyJWT then refuses a header's algorithm that does
            # not fit the key (an ES256 header with an RSA key), as an InvalidAlgorithmError.
            claims = jwt.decode(
                token,
                key,
                algorithms=self.settings.algorithms,
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=self.settings.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWKClientConnectionError as exc:
            log.warning("the JWKS at %s could not be fetched", self.settings.jwks_url)
            raise Unauthenticated("jwks_unavailable", "the issuer's keys could not be fetched") from exc
        except (jwt.PyJWTError, TypeError, ValueError) as exc:
            # TypeError/ValueError: what a key library may raise for a key it cannot use.
            raise Unauthenticated("invalid_jwt", f"bearer JWT refused: {type(exc).__name__}") from exc
        return self._caller(claims)

    def _caller(self, claims: dict[str, Any]) -> Caller:
        subject = claims.get(self.settings.name_claim)
        if not isinstance(subject, str) or not 1 <= len(subject) <= _MAX_SUBJECT:
            raise Unauthenticated(
                "jwt_claims",
                f"bearer JWT refused: no {self.settings.name_claim} claim of 1-{_MAX_SUBJECT} characters",
            )
        try:
            employer = identifier(claims.get(self.settings.employer_claim))
        except ValueError as exc:
            why = f"bearer JWT refused: its {self.settings.employer_claim} claim: {exc}"
            raise Unauthenticated("jwt_claims", why) from exc
        scopes = _scopes(claims.get(self.settings.scopes_claim))
        return Caller(f"oidc:{self.issuer}#{subject}", employer, scopes)


def _scopes(claim: object) -> frozenset[Scope]:
    """This API's scopes among the claim's (others, an issuer's own, are ignored)."""
    named = claim.split() if isinstance(claim, str) else claim if isinstance(claim, list) else []
    known = {s.value for s in Scope}
    return frozenset(Scope(s) for s in named if isinstance(s, str) and s in known)
