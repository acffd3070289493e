"""The two wire formats of a record's value, and which one this process writes.

- **Avro single-object encoding** (the default): `C3 01`, the writer schema's CRC-64-AVRO
  fingerprint (8 bytes, little-endian), the body. A reader needs only the schema files.
- **The Schema Registry wire format** (Confluent's): `00`, the writer schema's id in a
  registry (4 bytes, big-endian), the body. What Kafka Connect's Avro converters, ksqlDB,
  Kafka UIs and confluent-kafka's `AvroDeserializer` read.

Every reader accepts both. What a process writes is chosen once, at its start: with a
registry configured, `runtime.schema_registry` registers this release's schemas, then hands
the ids it got to `use_registry`; from then on `schemas.codec` writes the registry format.
Talking to a registry is the runtime's job: this module only holds what the process learnt
(the id of each schema it registered) and a way to learn the schema behind an id it has not
seen (`SchemaSource`), so `schemas/` stays free of network clients.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SINGLE_OBJECT_MAGIC = b"\xc3\x01"
SINGLE_OBJECT_HEADER = struct.Struct("<2sq")
REGISTRY_MAGIC = b"\x00"
REGISTRY_HEADER = struct.Struct(">cI")

SchemaSource = Callable[[int], str]
"""The schema text registered under an id (asks the registry; raises SchemaLookupError)."""


class SchemaLookupError(RuntimeError):
    """The registry could not say which schema an id names, right now. Not the record's
    fault, so readers do not treat it as a bad record: the reader's session fails and is
    resumed, as after any other infrastructure error."""


def registry_header(schema_id: int) -> bytes:
    return REGISTRY_HEADER.pack(REGISTRY_MAGIC, schema_id)


@dataclass
class Registry:
    """What this process knows of its schema registry.

    `ids`: writer fingerprint → schema id, for every schema this process registered at
    start (so writing never waits for the registry). `source`: the schema text behind any
    other id, asked for the first time a reader meets it and kept from then on. `write`:
    whether the process writes the registry format (False during the first step of a
    migration: read both formats, write single-object; docs/operations/schema-registry.md)."""

    ids: dict[int, int]
    source: SchemaSource
    write: bool = True
    _headers: dict[int, bytes] = field(init=False, repr=False)
    _fingerprints: dict[int, int] = field(init=False, repr=False)
    _fetched: dict[int, tuple[int, dict[str, Any]]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._headers = {fp: registry_header(schema_id) for fp, schema_id in self.ids.items()}
        self._fingerprints = {schema_id: fp for fp, schema_id in self.ids.items()}

    def header(self, fingerprint: int) -> bytes | None:
        """The registry header of a schema this process registered; None for another."""
        return self._headers.get(fingerprint)

    def registered(self, schema_id: int) -> int | None:
        """The fingerprint of a schema this process registered under that id, if it did."""
        return self._fingerprints.get(schema_id)

    def fetch(self, schema_id: int, fingerprint_of: Callable[[Any], int]) -> tuple[int, dict[str, Any]]:
        """(fingerprint, schema) behind any id; asks `source` once per id."""
        known = self._fetched.get(schema_id)
        if known is None:
            text = self.source(schema_id)
            try:
                schema = json.loads(text)
            except ValueError as exc:
                raise SchemaLookupError(f"schema id {schema_id} is not JSON: {text[:80]!r}") from exc
            known = (fingerprint_of(schema), schema)
            self._fetched[schema_id] = known
        return known


_registry: Registry | None = None


def use_registry(registry: Registry | None) -> None:
    """Choose this process's framing: the registry's (None: single-object encoding only)."""
    global _registry
    _registry = registry


def registry() -> Registry | None:
    return _registry
