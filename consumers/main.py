"""Entry points: `jobpost consumer <linkedin|indeed>` and `jobpost dlq list|redrive`."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass

import aiohttp
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from prometheus_client import start_http_server

from consumers.boards.indeed import IndeedAdapter
from consumers.boards.linkedin import LinkedInAdapter
from consumers.config import ConsumerSettings
from consumers.errors import DeliveryError
from consumers.lanes import Board
from consumers.runner import DeliveryRunner
from schemas import records
from schemas.dead_letters import dead_letter, letter_headers
from schemas.deliveries import delivery_state, state_record
from schemas.kafka import coordinates, is_record
from schemas.model import DeliveryStatus, Destination, Op, PostingUpdate
from schemas.outbox import Outgoing, deliver_all
from schemas.replay import replay
from schemas.topics import Topics


def make_board(settings: ConsumerSettings, client: aiohttp.ClientSession) -> Board:
    if settings.destination == Destination.LINKEDIN:
        return LinkedInAdapter(client, settings.linkedin)
    return IndeedAdapter(client, settings.indeed)


def run_consumer(destination: str) -> None:
    settings = ConsumerSettings(destination=Destination(destination))
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.metrics_host)

    async def main() -> None:
        connector = aiohttp.TCPConnector(limit=settings.max_in_flight)
        async with aiohttp.ClientSession(connector=connector) as client:
            runner = DeliveryRunner(settings, make_board(settings, client))
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, runner.stop)
            await runner.run()

    asyncio.run(main())


@dataclass(frozen=True)
class DeadLetter:
    """One record of a dead-letter topic and its `jobpost.*` headers, as text."""

    partition: int
    offset: int
    update: PostingUpdate | None  # None: the letter cannot be decoded
    headers: dict[str, str]


def dead_letters(destination: str) -> list[DeadLetter]:
    """Every record of the board consumer's dead-letter topic."""
    settings = ConsumerSettings(destination=Destination(destination))
    topic = Topics(settings.kafka.topic_prefix).dlq(settings.dead_letter_group)
    found: list[DeadLetter] = []

    def take(message: Message) -> None:
        _, partition, offset = coordinates(message)
        found.append(DeadLetter(partition, offset, _letter(message), letter_headers(message)))

    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return found


def _letter(message: Message) -> PostingUpdate | None:
    try:
        _, update = records.posting_update(message)
    except records.PoisonRecord:
        return None
    return update


def list_dead_letters(destination: str) -> None:
    for letter in dead_letters(destination):
        update, error = letter.update, letter.headers.get("jobpost.error")
        if update is None:
            print(f"undecodable letter at partition {letter.partition} offset {letter.offset}: {error}")
            continue
        print(f"{update.posting_id} version {update.version} ({update.op}): "
              f"{letter.headers.get('jobpost.attempts')} attempts, {error}")  # fmt: skip


def redrive(destination: str) -> None:
    """Attempt every dead letter once more, skipping versions a newer delivery superseded.
    A letter that fails again is dead-lettered again (so a later redrive sees it); the
    group `<prefix>-<destination>-redrive` commits past a letter only once what it led to
    (its delivery state, or its new dead letter) is acknowledged by Kafka."""
    settings = ConsumerSettings(destination=Destination(destination))
    topics = Topics(settings.kafka.topic_prefix)
    delivered = _delivered_versions(settings)

    async def main() -> None:
        consumer = Consumer(settings.kafka.consumer_config(f"{settings.group}-redrive"))
        consumer.subscribe([topics.dlq(settings.dead_letter_group)])
        producer = Producer(settings.kafka.producer_config())
        async with aiohttp.ClientSession() as client:
            board = make_board(settings, client)
            idle = 0
            while idle < 20:
                message = consumer.poll(0.25)
                if message is None or not is_record(message):
                    idle += 1
                    continue
                idle = 0
                report, outgoing = await _redrive_one(board, message, delivered, topics, settings)
                if not deliver_all(producer, outgoing, lambda: False):
                    raise RuntimeError("redrive: Kafka did not acknowledge its writes")
                topic, partition, offset = coordinates(message)
                past = TopicPartition(topic, partition, offset + 1)
                consumer.commit(offsets=[past], asynchronous=False)
                print(report)
        consumer.close()

    asyncio.run(main())


async def _redrive_one(
    board: Board, message: Message, delivered: dict[str, int], topics: Topics, settings: ConsumerSettings
) -> tuple[str, list[Outgoing]]:
    """One letter: what to print, and what to write before committing past it."""
    group = settings.dead_letter_group
    update = _letter(message)
    if update is None:
        letter = dead_letter(topics, group, message, "undecodable dead letter")
        return f"undecodable letter at {message.partition()}/{message.offset()}: dead-lettered again", [
            letter
        ]
    label = f"{update.posting_id} version {update.version}"
    if delivered.get(update.posting_id, -1) >= update.version:
        return f"{label}: skipped, a newer version was delivered", []
    deleted = update.op == Op.DELETED
    try:
        await (board.close(update) if deleted else board.upsert(update))
    except DeliveryError as exc:
        letter = dead_letter(
            topics, group, message, f"redrive: {exc}",
            version=update.version, posting_id=update.posting_id,
        )  # fmt: skip
        return f"{label}: failed again, dead-lettered again: {exc}", [letter]
    delivered[update.posting_id] = update.version
    source = letter_headers(message).get("jobpost.source_partition", "0")
    state = delivery_state(
        settings.destination,
        update.posting_id,
        status=DeliveryStatus.CLOSED if deleted else DeliveryStatus.DELIVERED,
        delivered_version=update.version,
        attempts=1,
    )
    return f"{label}: delivered", [state_record(topics.deliveries, int(source), state)]


def _delivered_versions(settings: ConsumerSettings) -> dict[str, int]:
    versions: dict[str, int] = {}

    def take(message: Message) -> None:
        try:
            found, posting_id, state = records.delivery_state(message)
        except records.PoisonRecord:
            return
        if found == settings.destination and state is not None and state.delivered_version is not None:
            versions[posting_id] = state.delivered_version

    topic = Topics(settings.kafka.topic_prefix).deliveries
    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return versions
