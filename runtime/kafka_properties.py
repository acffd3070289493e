"""librdkafka properties passed through from the environment or a properties file.

An environment variable cannot hold a dot, and a few librdkafka properties hold an
underscore (`log_level`, `enabled_events`), so a property's name is written in a variable
as: `.` → `_`, `_` → `__`, any case (`JOBPOST_KAFKA_CONFIG__SSL_CA_LOCATION` is
`ssl.ca.location`, `JOBPOST_KAFKA_CONFIG__LOG__LEVEL` is `log_level`). A key that already
holds a dot (from a properties file, or given in code), or that is one of librdkafka's own
underscored names (`log_level`), is taken as it is. Every property of librdkafka's
CONFIGURATION.md can be written either way.

The properties file (`JOBPOST_KAFKA_CONFIG_FILE`) is in Java's `.properties` format, read as
UTF-8, so a `client.properties` a Kafka provider hands out works as it is, as long as it
names librdkafka's properties (Java-only ones such as `sasl.jaas.config` are refused by
librdkafka when the client is made, and the start check says which).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import SecretStr

# Set by the code for a reason a property must not override: refused, with the reason.
OWNED = {
    "partitioner": "producers use Java's partitioner (murmur2_random): commands and postings co-partition",
    "acks": "every producer waits for acks=all, so no accepted write is lost",
    "enable.idempotence": "every producer is idempotent",
    "transactional.id": "the sequencer makes its own per member",
    "linger.ms": "each producer sets its own",
    "group.id": "each component has its own group (JOBPOST_<COMPONENT>_GROUP_ID)",
    "group.instance.id": "every consumer of a process would share it",
    "isolation.level": "readers of transactional topics read committed records only",
    "enable.auto.commit": "offsets are committed only after the work is done",
    "enable.auto.offset.store": "offsets are stored only after the work is done",
    "auto.offset.reset": "each reader sets where it starts",
    "enable.partition.eof": "each reader sets it",
    "partition.assignment.strategy": "group members use cooperative-sticky",
    "session.timeout.ms": "a component's session timeout is its own setting",
    "heartbeat.interval.ms": "follows the component's session timeout",
    "max.poll.interval.ms": "each component sets its own",
}

# Properties the typed settings also name: they move into those fields.
ALIASES = {
    "bootstrap.servers": "bootstrap_servers",
    "metadata.broker.list": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
}

# librdkafka's properties whose names hold an underscore and no dot (CONFIGURATION.md).
_UNDERSCORED = frozenset({"log_level", "enabled_events"})

_SECRET = re.compile(r"password|secret|passphrase|key\.pem$|^sasl\.oauthbearer\.config$")


def is_secret(name: str) -> bool:
    """Passwords, client secrets, passphrases and private keys: kept as SecretStr."""
    return bool(_SECRET.search(name))


def property_name(key: str) -> str:
    """The librdkafka property a configuration key names (see the module docstring)."""
    key = key.strip().lower()
    if "." in key or key in _UNDERSCORED:
        return key
    return "_".join(part.replace("_", ".") for part in key.split("__"))


def environment_key(name: str) -> str:
    """The variable suffix that names a property: property_name's inverse."""
    return name.replace("_", "__").replace(".", "_").upper()


def normalized(values: Mapping[str, str | SecretStr]) -> dict[str, str | SecretStr]:
    """Keys as property names, secrets as SecretStr, everything else as plain text."""
    result: dict[str, str | SecretStr] = {}
    for key, value in values.items():
        name = property_name(key)
        text = value.get_secret_value() if isinstance(value, SecretStr) else str(value)
        result[name] = SecretStr(text) if is_secret(name) else text
    return result


def plain(value: str | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else value


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def read_properties(path: Path) -> dict[str, str]:
    """The key/value pairs of a Java `.properties` file: `#` and `!` comments, `=`, `:` or
    whitespace between key and value, a trailing backslash continuing a line, and the
    escapes `\\t \\n \\r \\f \\uXXXX` (any other escaped character stands for itself)."""
    pairs: dict[str, str] = {}
    for line in _logical_lines(path.read_text(encoding="utf-8")):
        key, value = _split(line)
        pairs[_unescape(key)] = _unescape(value)
    return pairs


def _logical_lines(text: str) -> list[str]:
    lines, pending = [], ""
    for natural in text.splitlines():
        stripped = natural.lstrip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2:  # an odd number of backslashes: the line goes on
            pending += stripped[:-1]
            continue
        lines.append(pending + stripped)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _split(line: str) -> tuple[str, str]:
    """Key and value of a logical line (leading whitespace already gone)."""
    i = 0
    while i < len(line) and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        code = text[i + 1]
        if code == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(code, code))
        i += 2
    return "".join(out)
