"""Dead letters: writing one (the record unchanged, for its group's dead-letter topic, with
`schemas.dead_letters.DeadLetterHeaders`; logged and counted here, produced and acknowledged
by the caller), and reading a board's letters back for an operator (`jobpost dlq list`, the
API's operations panel)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from confluent_kafka import Message
from prometheus_client import Counter

from runtime import records
from runtime.kafka import KafkaSettings, coordinates
from runtime.outbox import Outgoing
from runtime.replay import replay
from schemas.dead_letters import DeadLetterHeaders
from schemas.model import PostingUpdate
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


@dataclass(frozen=True)
class DeadLetter:
    """One record of a dead-letter topic and its headers, as an operator lists it."""

    partition: int
    offset: int
    update: PostingUpdate | None  # None: the letter cannot be decoded
    headers: DeadLetterHeaders
    message: Message = field(repr=False, compare=False)

    @property
    def error(self) -> str:
        return self.headers.error

    @property
    def attempts(self) -> int:
        return self.headers.attempts

    @property
    def at(self) -> int | None:
        """When the last attempt before it was dead-lettered was made (ms)."""
        return self.headers.last_attempt_ms


def read_dead_letters(kafka: KafkaSettings, topic: str) -> list[DeadLetter]:
    """Every record of a dead-letter topic, oldest first per partition."""
    found: list[DeadLetter] = []

    def take(message: Message) -> None:
        _, partition, offset = coordinates(message)
        headers = DeadLetterHeaders.parse(message.headers())
        found.append(DeadLetter(partition, offset, _letter(message), headers, message))

    replay(kafka, topic, range(kafka.partitions), take)
    return found


def newest_per_version(letters: list[DeadLetter]) -> list[DeadLetter]:
    """One letter per posting version (the newest: a version redriven and refused again has
    two), newest first; an undecodable letter stands alone."""
    newest: dict[tuple[str, int] | tuple[int, int], DeadLetter] = {}
    for letter in letters:
        update = letter.update
        newest[
            (letter.partition, letter.offset) if update is None else (update.posting_id, update.version)
        ] = letter
    return sorted(newest.values(), key=lambda letter: (letter.at or 0, letter.offset), reverse=True)


def _letter(message: Message) -> PostingUpdate | None:
    try:
        _, update = records.posting_update(message)
    except records.PoisonRecord:
        return None
    return update
