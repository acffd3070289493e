"""`make run` turns webhooks on for development: a Fernet key made once and kept, endpoints
on this machine accepted; what the caller sets wins."""

from __future__ import annotations

from cryptography.fernet import Fernet

from jobpost_dev.run_env import webhooks_env


def test_a_key_is_made_once_kept_private_and_used_again(tmp_path):
    first = webhooks_env(tmp_path, {})
    Fernet(first["JOBPOST_WEBHOOK_SECRETS_KEY"])  # a Fernet key
    assert webhooks_env(tmp_path, {})["JOBPOST_WEBHOOK_SECRETS_KEY"] == first["JOBPOST_WEBHOOK_SECRETS_KEY"]
    assert (tmp_path / "webhook-secrets.key").stat().st_mode & 0o077 == 0
    assert first["JOBPOST_API_WEBHOOK_LOCAL_HTTP"] == "true"


def test_the_callers_settings_win(tmp_path):
    given = {"JOBPOST_WEBHOOK_SECRETS_KEY": "k", "JOBPOST_API_WEBHOOK_LOCAL_HTTP": "false"}
    assert webhooks_env(tmp_path, given) == {}
    assert not (tmp_path / "webhook-secrets.key").exists()
