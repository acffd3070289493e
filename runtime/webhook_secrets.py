"""Webhook signing secrets: made (`new_secret`: `whsec_` and the base64 of 32 random bytes,
as the Standard Webhooks specification writes a symmetric secret), and kept encrypted at
rest in `jobpost.webhooks` with Fernet keys from `JOBPOST_WEBHOOK_SECRETS_KEY`.

The API seals a secret it makes and shows it once; the webhooks dispatcher opens it to
sign. Several keys, comma-separated, rotate the key itself: the first seals, every one
opens (cryptography's MultiFernet), so records sealed with an older key stay readable
while it is listed. A Fernet key is made with
`python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"`.
"""

from __future__ import annotations

import base64
import secrets

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from runtime.settings_file import Settings

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32  # the specification asks for 24 to 64


class WebhookSecretsSettings(Settings):
    """Environment prefix `JOBPOST_WEBHOOK_SECRETS_` (so the key is `JOBPOST_WEBHOOK_SECRETS_KEY`),
    read by the API and the webhooks dispatcher alike."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_WEBHOOK_SECRETS_", hide_input_in_errors=True)

    key: SecretStr = Field(
        default=SecretStr(""),
        description="Fernet keys, comma-separated: the first encrypts, every one decrypts (empty: "
        "webhooks are off)",
    )

    @field_validator("key")
    @classmethod
    def _fernet_keys(cls, key: SecretStr) -> SecretStr:
        for number, part in enumerate(_parts(key), 1):
            try:
                Fernet(part)
            except ValueError:
                raise ValueError(
                    f"key {number} is not a Fernet key (the URL-safe base64 of 32 bytes)"
                ) from None
        return key

    def box(self) -> SecretBox | None:
        """The box sealing and opening secrets with these keys; None when none is set."""
        keys = _parts(self.key)
        return SecretBox(keys) if keys else None


class SecretUnreadable(Exception):
    """A sealed secret none of the keys opens (the key it was sealed with is not listed)."""


class SecretBox:
    def __init__(self, keys: list[str]) -> None:
        self._fernet = MultiFernet([Fernet(k) for k in keys])

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode())

    def open(self, sealed: bytes) -> str:
        try:
            return self._fernet.decrypt(sealed).decode()
        except InvalidToken as exc:
            raise SecretUnreadable("no key of JOBPOST_WEBHOOK_SECRETS_KEY opens this secret") from exc


def new_secret() -> str:
    """A fresh signing secret, `whsec_<base64 of 32 random bytes>`."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _parts(key: SecretStr) -> list[str]:
    return [part.strip() for part in key.get_secret_value().split(",") if part.strip()]
