"""Writing a dead letter: the record unchanged, for its group's dead-letter topic, with
`schemas.dead_letters.DeadLetterHeaders`; logged and counted here, produced (and
acknowledged) by the caller."""

from __future__ import annotations

import logging
import time

from confluent_kafka import Message
from prometheus_client import Counter

from runtime.outbox import Outgoing
from schemas.dead_letters import DeadLetterHeaders
from schemas.topics import Component, Topics

log = logging.getLogger(__name__)

DEAD_LETTERS = Counter(
    "jobpost_dead_letters_total", "Records sent to jobpost.<group>.dlq, by group (short name)", ["group"]
)


def dead_letter(
    topics: Topics,
    group: Component,
    message: Message,
    error: str,
    *,
    attempts: int = 1,
    first_attempt_ms: int | None = None,
    version: int | None = None,
    posting_id: str | None = None,
    value: bytes | None = None,
) -> Outgoing:
    """`message` unchanged, for the group's dead-letter topic, with headers saying why; or,
    given `value`, that record instead of the message's (a redrive request's dead-lettered
    version, refused again: the letter is the version, the headers say it came from the
    request)."""
    context = {"posting_id": posting_id, "version": version, "group": group.value}
    log.error("dead-lettered: %s", error, extra=context)
    DEAD_LETTERS.labels(group.value).inc()
    now = time.time_ns() // 1_000_000
    headers = DeadLetterHeaders(
        error=error,
        source_topic=message.topic() or "",
        source_partition=message.partition() or 0,
        source_offset=message.offset() or 0,
        attempts=attempts,
        first_attempt_ms=first_attempt_ms or now,
        last_attempt_ms=now,
    )
    body = message.value() if value is None else value
    return Outgoing(topics.dlq(group), message.key(), body, headers=headers.to_headers())
