"""A Schema Registry for the records: register this release's schemas at start, then write
the registry's wire format (`schemas.framing`).

Any registry with Confluent's REST API works (Apicurio serves it at `/apis/ccompat/v7`).
At start a process registers the newest schema of every topic's record type under the
topic's subject (`schemas.subjects`), after holding the subject to BACKWARD_TRANSITIVE
compatibility: a reader with the newest schema reads every version ever registered, which is
what the codec promises. A schema the registry refuses stops the process there, at start,
with the registry's reason; once started, writing never calls the registry (the ids are
kept), and reading calls it only for an id this process has not seen (then keeps it).
"""

from __future__ import annotations

import time
from typing import Any, Literal

import httpx
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from runtime.settings_file import Settings
from schemas import framing
from schemas.codec import UnknownSchemaError
from schemas.subjects import subject, value_codecs
from schemas.topics import Topics

COMPATIBILITY = "BACKWARD_TRANSITIVE"
# Levels that already promise what COMPATIBILITY does; any other is raised to it.
AT_LEAST_COMPATIBILITY = frozenset({"BACKWARD_TRANSITIVE", "FULL_TRANSITIVE"})
_MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistrySettings(Settings):
    """Environment prefix `JOBPOST_SCHEMA_REGISTRY_` (`JOBPOST_SCHEMA_REGISTRY_URL` etc.)."""

    model_config = SettingsConfigDict(env_prefix="JOBPOST_SCHEMA_REGISTRY_")

    url: str | None = Field(default=None, description="the Confluent-compatible API; unset: no registry")
    username: str | None = None
    """HTTP basic user for the registry"""
    password: SecretStr | None = None
    """HTTP basic password for the registry (a secret)"""
    write_format: Literal["registry", "single-object"] = Field(
        default="registry", description="single-object: read both formats but write the old one (migration)"
    )
    timeout_s: float = Field(default=5.0, gt=0, description="each call to the registry")
    start_timeout_s: float = Field(default=60.0, gt=0, description="how long start waits for the registry")

    @field_validator("url")
    @classmethod
    def _empty_is_none(cls, url: str | None) -> str | None:
        return url.rstrip("/") or None if url else None


class SchemaRegistryError(RuntimeError):
    """The registry refused this release's schemas, or could not be reached, at start."""


class RegistryClient:
    """The few calls of Confluent's REST API this project makes."""

    def __init__(
        self, settings: SchemaRegistrySettings, transport: httpx.BaseTransport | None = None
    ) -> None:
        if not settings.url:
            raise ValueError("no schema registry URL")
        auth = None
        if settings.username:
            password = settings.password.get_secret_value() if settings.password else ""
            auth = httpx.BasicAuth(settings.username, password)
        self.url = settings.url
        self._http = httpx.Client(
            base_url=settings.url,
            auth=auth,
            timeout=settings.timeout_s,
            headers={"Accept": _MEDIA_TYPE, "Content-Type": _MEDIA_TYPE},
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def versions(self, subject_name: str) -> list[int] | None:
        """The subject's versions; None when the registry has no such subject."""
        answer = self._http.get(f"/subjects/{subject_name}/versions")
        if answer.status_code == 404:
            return None
        return list(_json(answer, f"the versions of {subject_name}"))

    def compatibility(self, subject_name: str) -> str | None:
        answer = self._http.get(f"/config/{subject_name}", params={"defaultToGlobal": "true"})
        if answer.status_code == 404:
            return None
        return str(_json(answer, f"the compatibility of {subject_name}").get("compatibilityLevel") or "")

    def set_compatibility(self, subject_name: str, level: str) -> bool:
        """False when another process set the subject's level at the same moment (409)."""
        answer = self._http.put(f"/config/{subject_name}", json={"compatibility": level})
        if answer.status_code == 409:
            return False
        _json(answer, f"setting {subject_name} to {level}")
        return True

    def register(self, subject_name: str, schema_text: str) -> int:
        """The id of the schema under the subject: the existing one when it is registered
        already, a new version otherwise (checked for compatibility by the registry)."""
        answer = self._http.post(f"/subjects/{subject_name}/versions", json={"schema": schema_text})
        if answer.status_code == 409:
            raise SchemaRegistryError(
                f"the schema registry refused this release's schema for {subject_name} as incompatible"
                f" with what it holds ({COMPATIBILITY}): {_reason(answer)}"
            )
        return int(_json(answer, f"registering {subject_name}")["id"])

    def schema_text(self, schema_id: int) -> str:
        """The schema registered under an id (for a reader meeting it the first time)."""
        for attempt in range(3):
            try:
                answer = self._http.get(f"/schemas/ids/{schema_id}")
            except httpx.HTTPError as exc:
                failure = f"{exc!r}"
            else:
                if answer.status_code == 404:
                    raise UnknownSchemaError(f"the schema registry has no schema id {schema_id}")
                if answer.status_code == 200:
                    return str(answer.json()["schema"])
                failure = f"HTTP {answer.status_code}: {_reason(answer)}"
            time.sleep(0.5 * 2**attempt)
        raise framing.SchemaLookupError(f"the schema registry did not name schema id {schema_id}: {failure}")


def use_schema_registry(settings: SchemaRegistrySettings, topics: Topics) -> framing.Registry | None:
    """Choose this process's wire format: with a registry URL, register every value schema
    of this release (waiting up to `start_timeout_s` for the registry to answer) and write
    the registry's format; without one, single-object encoding as before. Raises
    SchemaRegistryError when the registry refuses a schema or cannot be reached."""
    if not settings.url:
        framing.use_registry(None)
        return None
    client = RegistryClient(settings)
    deadline = time.monotonic() + settings.start_timeout_s
    ids: dict[int, int] = {}
    for topic, avro in value_codecs(topics).items():
        ids[avro.fingerprint] = _until_answered(client, subject(topic), avro.text, deadline)
    registry = framing.Registry(ids, client.schema_text, write=settings.write_format == "registry")
    framing.use_registry(registry)
    return registry


def _ensure(client: RegistryClient, subject_name: str, schema_text: str) -> int:
    """Register under the subject held to COMPATIBILITY. An existing subject is held to it
    before registering (so the registry checks the new schema); a new one right after (a
    subject's level can be set only once the subject exists in some registries)."""
    exists = client.versions(subject_name) is not None
    if exists:
        _hold_compatibility(client, subject_name)
    schema_id = client.register(subject_name, schema_text)
    if not exists:
        _hold_compatibility(client, subject_name)
    return schema_id


def _hold_compatibility(client: RegistryClient, subject_name: str) -> None:
    # Components start together: two may set a new subject's level at once, and a
    # registry may refuse the second (Apicurio: "a rule named COMPATIBILITY already
    # exists"). Then the level is read again.
    for _ in range(3):
        if client.compatibility(subject_name) in AT_LEAST_COMPATIBILITY:
            return
        if client.set_compatibility(subject_name, COMPATIBILITY):
            return
    raise SchemaRegistryError(
        f"could not hold {subject_name} to {COMPATIBILITY}: another client keeps changing it"
    )


def _until_answered(client: RegistryClient, subject_name: str, schema_text: str, deadline: float) -> int:
    while True:
        try:
            return _ensure(client, subject_name, schema_text)
        except (httpx.TransportError, _Unavailable) as exc:
            if time.monotonic() > deadline:
                raise SchemaRegistryError(f"the schema registry did not answer: {exc}") from exc
            time.sleep(1.0)


class _Unavailable(Exception):
    """A 5xx: the registry is there but not ready (starting, its storage away)."""


def _json(answer: httpx.Response, what: str) -> Any:
    if answer.status_code >= 500:
        raise _Unavailable(f"{what}: HTTP {answer.status_code}: {_reason(answer)}")
    if answer.status_code in (401, 403):
        raise SchemaRegistryError(
            f"the schema registry refused the credentials (HTTP {answer.status_code}) for {what}:"
            " check JOBPOST_SCHEMA_REGISTRY_USERNAME and _PASSWORD"
        )
    if answer.status_code >= 300:
        status = answer.status_code
        raise SchemaRegistryError(f"the schema registry refused {what}: HTTP {status}: {_reason(answer)}")
    return answer.json()


def _reason(answer: httpx.Response) -> str:
    try:
        body = answer.json()
    except ValueError:
        return answer.text[:500]
    return str(body.get("message") or body)[:500] if isinstance(body, dict) else str(body)[:500]
