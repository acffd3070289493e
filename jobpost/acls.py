"""`jobpost acls`: the principals of `runtime.acls` as a table, and with `--apply` their ACL
bindings created on the cluster (and, given passwords, their SCRAM users), through the admin
client of `KafkaClients` under the settings' own principal, which must be allowed to alter
the cluster's ACLs (a super user). Applying twice changes nothing the second time: Kafka
keeps one copy of a binding, and what is there already is counted, not created again.
Bindings the table no longer names are reported, never deleted: removing access is a
decision for a person (`kafka-acls --remove`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
)

from runtime.acls import Grant, Principal, Resource
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients

_RESOURCE = {
    Resource.TOPIC: ResourceType.TOPIC,
    Resource.GROUP: ResourceType.GROUP,
    Resource.TRANSACTIONAL_ID: ResourceType.TRANSACTIONAL_ID,
}
SCRAM_ITERATIONS = 8192  # what Kafka's own tools use for SCRAM-SHA-512
TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Applied:
    created: int
    present: int
    users: list[str]
    unknown: list[str]  # bindings of these principals the table does not name


def bindings(principal: Principal) -> list[AclBinding]:
    return [
        _binding(principal, grant, operation) for grant in principal.grants for operation in grant.operations
    ]


def _binding(principal: Principal, grant: Grant, operation: str) -> AclBinding:
    return AclBinding(
        _RESOURCE[grant.resource],
        grant.name,
        ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL,
        principal.principal,
        "*",
        AclOperation[operation],
        AclPermissionType.ALLOW,
    )


def apply(kafka: KafkaSettings, found: list[Principal], passwords: dict[str, str] | None = None) -> Applied:
    """Create every binding of `found` not on the cluster yet, and upsert a SCRAM-SHA-512
    credential for each principal whose role `passwords` names."""
    admin = KafkaClients(kafka).admin()
    users = _upsert_users(admin, found, passwords or {})
    existing = {_key(b) for p in found for b in _existing(admin, p.principal)}
    wanted = [b for p in found for b in bindings(p)]
    missing = [b for b in wanted if _key(b) not in existing]
    for future in admin.create_acls(missing, request_timeout=TIMEOUT_S).values() if missing else ():
        future.result(TIMEOUT_S)
    named = {_key(b) for b in wanted}
    unknown = sorted(_describe(k) for k in existing - named)
    return Applied(len(missing), len(wanted) - len(missing), users, unknown)


def _existing(admin: AdminClient, principal: str) -> list[AclBinding]:
    # None: any resource name, any host (the client's stubs type them str only).
    query = AclBindingFilter(
        ResourceType.ANY,
        None,  # type: ignore[arg-type]
        ResourcePatternType.ANY,
        principal,
        None,  # type: ignore[arg-type]
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    return list(admin.describe_acls(query, request_timeout=TIMEOUT_S).result(TIMEOUT_S))


def _upsert_users(admin: AdminClient, found: list[Principal], passwords: dict[str, str]) -> list[str]:
    unknown = sorted(set(passwords) - {p.role.value for p in found})
    if unknown:
        raise ValueError(f"passwords for roles the table does not have: {', '.join(unknown)}")
    by_user: dict[str, str] = {}
    for p in found:
        password = passwords.get(p.role.value)
        if password is None:
            continue
        # Two roles may share a user (an API with its embedded sequencer): one password.
        if by_user.setdefault(p.user, password) != password:
            raise ValueError(f"two different passwords for the user {p.user}")
    upserts: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SCRAM_ITERATIONS), password.encode()
        )
        for user, password in by_user.items()
    ]
    if not upserts:
        return []
    for future in admin.alter_user_scram_credentials(upserts, request_timeout=TIMEOUT_S).values():
        future.result(TIMEOUT_S)
    return [u.user for u in upserts]


def read_passwords(path: Path) -> dict[str, str]:
    """`{"<role>": "<password>"}` (JSON), e.g. `{"api": "...", "linkedin": "..."}`."""
    document = json.loads(path.read_text())
    if not isinstance(document, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in document.items()
    ):
        raise ValueError(f"{path}: expected a JSON object of role names to passwords")
    return document


def _key(binding: AclBinding) -> tuple[str, ...]:
    return tuple(
        _named(part)
        for part in (
            binding.restype,
            binding.name,
            binding.resource_pattern_type,
            binding.principal,
            binding.host,
            binding.operation,
            binding.permission_type,
        )
    )


def _named(part: object) -> str:
    return part.name if isinstance(part, Enum) else str(part)


def _describe(key: tuple[str, ...]) -> str:
    restype, name, pattern, principal, host, operation, permission = key
    return (
        f"{principal} {permission} {operation} on {restype.lower()} {name} ({pattern.lower()}, host {host})"
    )
