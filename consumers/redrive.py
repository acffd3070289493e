"""Dead letters of a board and one more attempt at them: what `jobpost dlq list|redrive`
and the API's operations page (`/ops/dead-letters`) share.

A letter is redriven with the board adapter the consumer uses, once; a version a newer
delivery superseded is skipped; one that fails again is dead-lettered again (so a later
redrive sees it). What a redrive leads to (the delivery state and timeline event, or the
new letter) is returned for the caller to write before it moves past the letter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import aiohttp
from confluent_kafka import Message

from consumers.boards.indeed import IndeedAdapter
from consumers.boards.legacy import OneAtATime
from consumers.boards.linkedin import LinkedInAdapter
from consumers.boards.tokens import token_source
from consumers.config import ConsumerSettings
from consumers.errors import DeliveryError
from consumers.lanes import Board
from runtime import records
from runtime.dead_letters import dead_letter
from runtime.deliveries import event_record, state_record
from runtime.kafka import KafkaSettings, coordinates
from runtime.outbox import Outgoing
from runtime.replay import replay
from schemas.dead_letters import DeadLetterHeaders
from schemas.deliveries import delivery_event, delivery_state
from schemas.enums import DeliveryOutcome
from schemas.model import DeliveryStatus, Destination, Op, PostingUpdate
from schemas.topics import Topics


def make_board(settings: ConsumerSettings, client: aiohttp.ClientSession) -> Board:
    """The board's adapter behind the one-element shim the runner calls; refuses (raises
    UnsafeBoardSettings) a real board with the sandbox's credentials."""
    board = settings.linkedin if settings.destination == Destination.LINKEDIN else settings.indeed
    board.check_credentials()
    tokens = token_source(client, settings.destination, board)
    if settings.destination == Destination.LINKEDIN:
        return OneAtATime(LinkedInAdapter(client, settings.linkedin), tokens)
    return OneAtATime(IndeedAdapter(client, settings.indeed), tokens)


@dataclass(frozen=True)
class DeadLetter:
    """One record of a dead-letter topic and its headers."""

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


def dead_letters(settings: ConsumerSettings) -> list[DeadLetter]:
    """Every record of the board consumer's dead-letter topic, oldest first per partition."""
    topic = Topics(settings.kafka.topic_prefix).dlq(settings.component)
    found: list[DeadLetter] = []

    def take(message: Message) -> None:
        _, partition, offset = coordinates(message)
        headers = DeadLetterHeaders.parse(message.headers())
        found.append(DeadLetter(partition, offset, _letter(message), headers, message))

    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return found


@dataclass(frozen=True)
class Redriven:
    """What one letter's redrive came to, and what to write before moving past it."""

    outcome: Literal["delivered", "skipped", "failed"]
    detail: str
    outgoing: list[Outgoing]
    update: PostingUpdate | None = None

    @property
    def report(self) -> str:
        if self.update is None:
            return self.detail
        return f"{self.update.posting_id} version {self.update.version}: {self.detail}"


async def redrive_one(
    board: Board, message: Message, delivered_version: Callable[[str], int], settings: ConsumerSettings
) -> Redriven:
    """One more attempt at one letter, unless the board has its version (or a newer one)
    already: `delivered_version(posting_id)` says which it has (-1: none)."""
    topics = Topics(settings.kafka.topic_prefix)
    group = settings.component
    update = _letter(message)
    if update is None:
        letter = dead_letter(topics, group, message, "undecodable dead letter")
        where = f"undecodable letter at {message.partition()}/{message.offset()}"
        return Redriven("failed", f"{where}: dead-lettered again", [letter])
    if delivered_version(update.posting_id) >= update.version:
        return Redriven("skipped", "skipped, a newer version was delivered", [], update)
    deleted = update.op == Op.DELETED
    headers = DeadLetterHeaders.parse(message.headers())
    source = max(headers.source_partition, 0)
    attempt = headers.attempts + 1

    def event(outcome: DeliveryOutcome, error: str | None = None) -> Outgoing:
        happened = delivery_event(
            settings.destination, update.posting_id, update.version, outcome, attempt, error=error
        )
        return event_record(topics.delivery_events, source, happened)

    try:
        await (board.close(update) if deleted else board.upsert(update))
    except DeliveryError as exc:
        letter = dead_letter(
            topics, group, message, f"redrive: {exc}", attempts=attempt,
            version=update.version, posting_id=update.posting_id,
        )  # fmt: skip
        again = event(DeliveryOutcome.DEAD_LETTERED, f"redrive: {exc}")
        return Redriven("failed", f"failed again, dead-lettered again: {exc}", [letter, again], update)
    state = delivery_state(
        settings.destination,
        update.posting_id,
        status=DeliveryStatus.CLOSED if deleted else DeliveryStatus.DELIVERED,
        delivered_version=update.version,
        attempts=attempt,
    )
    done = event(DeliveryOutcome.CLOSED if deleted else DeliveryOutcome.DELIVERED)
    return Redriven("delivered", "delivered", [state_record(topics.deliveries, source, state), done], update)


def delivered_versions(kafka: KafkaSettings, destination: Destination) -> dict[str, int]:
    """Each posting's delivered version at `destination`, from `jobpost.deliveries`."""
    versions: dict[str, int] = {}

    def take(message: Message) -> None:
        try:
            found, posting_id, state = records.delivery_state(message)
        except records.PoisonRecord:
            return
        if found == destination and state is not None and state.delivered_version is not None:
            versions[posting_id] = state.delivered_version

    replay(kafka, Topics(kafka.topic_prefix).deliveries, range(kafka.partitions), take)
    return versions


def _letter(message: Message) -> PostingUpdate | None:
    try:
        _, update = records.posting_update(message)
    except records.PoisonRecord:
        return None
    return update
