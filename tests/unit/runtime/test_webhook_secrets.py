"""Webhook secrets: made as the specification writes them, sealed at rest, opened with any
listed key, and a key that is not one refused without being quoted."""

from __future__ import annotations

import base64

import pytest
from cryptography.fernet import Fernet
from pydantic import SecretStr, ValidationError

from runtime.webhook_secrets import SecretUnreadable, WebhookSecretsSettings, new_secret


def test_a_secret_is_whsec_and_32_random_bytes():
    secret = new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    assert new_secret() != secret


def test_a_sealed_secret_opens_with_its_key_and_is_not_the_secret():
    box = WebhookSecretsSettings(key=SecretStr(Fernet.generate_key().decode())).box()
    assert box is not None
    sealed = box.seal("whsec_abc")
    assert b"whsec_abc" not in sealed and box.open(sealed) == "whsec_abc"


def test_the_key_rotates_the_first_seals_every_one_opens():
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    sealed_before = WebhookSecretsSettings(key=SecretStr(old)).box().seal("whsec_old")  # type: ignore[union-attr]
    both = WebhookSecretsSettings(key=SecretStr(f"{new}, {old}")).box()
    assert both is not None and both.open(sealed_before) == "whsec_old"
    only_new = WebhookSecretsSettings(key=SecretStr(new)).box()
    assert only_new is not None and only_new.open(both.seal("whsec_new")) == "whsec_new"
    with pytest.raises(SecretUnreadable):
        only_new.open(sealed_before)


def test_no_key_is_no_box(monkeypatch):
    monkeypatch.delenv("JOBPOST_WEBHOOK_SECRETS_KEY", raising=False)
    assert WebhookSecretsSettings().box() is None


def test_a_key_that_is_not_a_fernet_key_is_refused_without_quoting_it(monkeypatch):
    monkeypatch.setenv("JOBPOST_WEBHOOK_SECRETS_KEY", "hunter2-not-a-key")
    with pytest.raises(ValidationError) as refused:
        WebhookSecretsSettings()
    assert "not a Fernet key" in str(refused.value) and "hunter2" not in str(refused.value)
