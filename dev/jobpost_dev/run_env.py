"""The environment of `jobpost run`'s children: the stack's Kafka and its replication, the
stack's schema registry, and the sandbox as both boards (its token endpoints and client),
each unless the caller's environment says otherwise."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.fernet import Fernet

from jobpost_dev import stack
from jobpost_dev.sandbox.tokens import SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET
from runtime.kafka import KafkaSettings

if TYPE_CHECKING:
    from jobpost_dev.run import RunSettings

# The Kafka settings `jobpost run` fills in from the stack when the caller has not set them.
KAFKA_VARIABLES = {
    "JOBPOST_KAFKA_BOOTSTRAP_SERVERS": "bootstrap_servers",
    "JOBPOST_KAFKA_REPLICATION_FACTOR": "replication_factor",
    "JOBPOST_KAFKA_MIN_INSYNC_REPLICAS": "min_insync_replicas",
}


def kafka_env(stack_settings: stack.StackSettings, environ: Mapping[str, str]) -> dict[str, str]:
    """The stack's Kafka for the components and the topics: its bootstrap servers, and the
    replication its brokers allow (one broker: replication factor 1, min.insync.replicas 1;
    three: 3 and 2). What `environ` sets wins; a Kafka of the caller's (another bootstrap)
    gets no replication from the stack: the caller's, or KafkaSettings' defaults (3 and 2)."""
    bootstrap = environ.get("JOBPOST_KAFKA_BOOTSTRAP_SERVERS", stack_settings.kafka_bootstrap)
    defaults = {"JOBPOST_KAFKA_BOOTSTRAP_SERVERS": stack_settings.kafka_bootstrap}
    if bootstrap == stack_settings.kafka_bootstrap:
        replicated = stack_settings.brokers > 1
        defaults["JOBPOST_KAFKA_REPLICATION_FACTOR"] = str(stack_settings.brokers)
        defaults["JOBPOST_KAFKA_MIN_INSYNC_REPLICAS"] = "2" if replicated else "1"
    return {name: value for name, value in defaults.items() if name not in environ}


def registry_env(stack_settings: stack.StackSettings, environ: Mapping[str, str]) -> dict[str, str]:
    """In registry mode (JOBPOST_STACK_REGISTRY=true) the components use the stack's
    registry, unless JOBPOST_SCHEMA_REGISTRY_URL names another."""
    if stack_settings.registry and not environ.get("JOBPOST_SCHEMA_REGISTRY_URL"):
        return {"JOBPOST_SCHEMA_REGISTRY_URL": stack_settings.registry_url}
    return {}


def kafka_settings(kafka: Mapping[str, str]) -> KafkaSettings:
    """KafkaSettings from the environment, with kafka_env's additions on top."""
    overrides: dict[str, Any] = {KAFKA_VARIABLES[name]: value for name, value in kafka.items()}
    return KafkaSettings(**overrides)


def component_env(
    token: str, settings: RunSettings, kafka: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment every component gets: the caller's, plus kafka_env's additions, the
    token, and the sandbox as each board whose URL the caller did not set, with the sandbox's
    token endpoint and client credentials, so the default system fetches and renews OAuth
    tokens as it would from the real boards. With real board URLs set the playground shows
    no fault switches."""
    sandbox = f"http://127.0.0.1:{settings.sandbox_port}"
    env = {**os.environ, **(kafka or {}), "JOBPOST_API_TOKENS": token}
    boards = {"LINKEDIN": ("linkedin", "/oauth/v2/accessToken"), "INDEED": ("indeed", "/oauth/v2/tokens")}
    if not any(f"JOBPOST_CONSUMER_{board}__BASE_URL" in env for board in boards):
        env.setdefault("JOBPOST_API_SANDBOX_URL", sandbox)
    # One employer registry for the API (which refuses what a board would) and both consumers
    # (which send it): the one the caller names for any of them.
    registries = ["JOBPOST_API_EMPLOYERS_FILE", *(f"JOBPOST_CONSUMER_{b}__EMPLOYERS_FILE" for b in boards)]
    named = next((env[name] for name in registries if env.get(name)), "")
    for name in registries if named else ():
        env.setdefault(name, named)
    for board, (path, token_path) in boards.items():
        prefix = f"JOBPOST_CONSUMER_{board}__"
        if f"{prefix}BASE_URL" in env:
            continue  # the caller's board, with the caller's credentials
        env[f"{prefix}BASE_URL"] = f"{sandbox}/{path}"
        env.setdefault(f"{prefix}TOKEN_URL", f"{sandbox}/{path}{token_path}")
        env.setdefault(f"{prefix}CLIENT_ID", SANDBOX_CLIENT_ID)
        env.setdefault(f"{prefix}CLIENT_SECRET", SANDBOX_CLIENT_SECRET)
    return env


def webhooks_env(folder: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """Webhooks on for development: the Fernet key their secrets are kept with, made once and
    kept in `folder` (the stack's, beside Kafka's data, whose records it opens), and
    endpoints on this machine accepted, plain http included; each unless `environ` sets it."""
    env = {}
    if not environ.get("JOBPOST_WEBHOOK_SECRETS_KEY"):
        path = folder / "webhook-secrets.key"
        if not path.exists():
            folder.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_bytes(Fernet.generate_key())
        env["JOBPOST_WEBHOOK_SECRETS_KEY"] = path.read_text().strip()
    if "JOBPOST_API_WEBHOOK_LOCAL_HTTP" not in environ:
        env["JOBPOST_API_WEBHOOK_LOCAL_HTTP"] = "true"
    return env
