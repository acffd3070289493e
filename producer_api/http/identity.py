"""Who a request comes from: its bearer token's caller (development tokens, the credentials
file, OIDC JWTs), then that credential's request rate."""

from __future__ import annotations

from producer_api.callers import Caller, Unauthenticated
from producer_api.config import ApiSettings
from producer_api.credentials import Credentials, CredentialsFile
from producer_api.http.limits import RateLimit
from producer_api.oidc import OidcTokens


class Identity:
    def __init__(self, credentials: Credentials, oidc: OidcTokens | None, rate: RateLimit) -> None:
        self.credentials = credentials
        self.oidc = oidc
        self.rate = rate

    @classmethod
    def of(cls, settings: ApiSettings) -> Identity:
        """From the settings; a credentials file that cannot be used, or OIDC settings that
        are incomplete, raise (CredentialsError, ValueError) before anything is served."""
        file = None
        if settings.credentials_file is not None:
            file = CredentialsFile(settings.credentials_file, settings.credentials_check_s)
        oidc = OidcTokens(settings.oidc) if settings.oidc.enabled else None
        return cls(Credentials(settings.token_set(), file), oidc, RateLimit(settings.rate_limit))

    async def caller(self, token: str) -> Caller:
        """The caller `token` stands for; Unauthenticated (with its reason) when none."""
        found = self.credentials.caller(token)
        if found is not None:
            return found
        if self.oidc is not None and self.oidc.looks_like_jwt(token):
            return await self.oidc.caller(token)
        raise Unauthenticated("unknown_token", "a token no credential has")
