"""The dead-letter contract: the original key and value, plus headers saying why.

A dead-letter topic belongs to the consumer group that writes it, not to a destination:
`jobpost.<group>.dlq`, where `group` is the group's short name (`schemas.topics.DEAD_LETTER_GROUPS`:
`sequencer`, `linkedin`, `indeed`, `search-indexer`). The indexer's group is
`search-indexer` while its progress is recorded for the destination `search`.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Message
from prometheus_client import Counter

from schemas.outbox import Outgoing
from schemas.topics import Topics

log = logging.getLogger(__name__)

DEAD_LETTERS = Counter(
    "jobpost_dead_letters_total", "Records sent to jobpost.<group>.dlq, by group (short name)", ["group"]
)


def dead_letter_headers(
    error: str,
    *,
    topic: str,
    partition: int,
    offset: int,
    attempts: int,
    first_attempt_ms: int | None = None,
    last_attempt_ms: int | None = None,
) -> list[tuple[str, str | bytes | None]]:
    now = time.time_ns() // 1_000_000
    return [
        ("jobpost.error", error.encode()[:4000]),
        ("jobpost.attempts", str(attempts).encode()),
        ("jobpost.first_attempt_ms", str(first_attempt_ms or now).encode()),
        ("jobpost.last_attempt_ms", str(last_attempt_ms or now).encode()),
        ("jobpost.source_topic", topic.encode()),
        ("jobpost.source_partition", str(partition).encode()),
        ("jobpost.source_offset", str(offset).encode()),
    ]


def letter_headers(message: Message) -> dict[str, str]:
    """A record's headers as text: how a dead letter's `jobpost.*` headers read back."""
    headers = message.headers() or []
    pairs = headers.items() if isinstance(headers, dict) else headers
    return {k: v.decode(errors="replace") if isinstance(v, bytes) else (v or "") for k, v in pairs}


def dead_letter(
    topics: Topics,
    group: str,
    message: Message,
    error: str,
    *,
    attempts: int = 1,
    first_attempt_ms: int | None = None,
    version: int | None = None,
    posting_id: str | None = None,
) -> Outgoing:
    """`message` unchanged, for the group's dead-letter topic, with headers saying why;
    counted and logged here, produced (and acknowledged) by the caller."""
    context = {"posting_id": posting_id, "version": version, "group": group}
    log.error("dead-lettered: %s", error, extra=context)
    DEAD_LETTERS.labels(group).inc()
    headers = dead_letter_headers(
        error,
        topic=message.topic() or "",
        partition=message.partition() or 0,
        offset=message.offset() or 0,
        attempts=attempts,
        first_attempt_ms=first_attempt_ms,
    )
    return Outgoing(topics.dlq(group), message.key(), message.value(), headers=headers)
