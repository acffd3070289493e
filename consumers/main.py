"""Entry points: `jobpost consumer <linkedin|indeed>` and `jobpost dlq list|redrive`."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import aiohttp
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client import start_http_server

from consumers.boards.indeed import IndeedAdapter
from consumers.boards.linkedin import LinkedInAdapter
from consumers.config import ConsumerSettings
from consumers.errors import DeliveryError
from consumers.lanes import Board
from consumers.runner import DeliveryRunner
from schemas import records
from schemas.dead_letters import dead_letter
from schemas.deliveries import delivery_state, state_record
from schemas.kafka import coordinates, is_record
from schemas.model import DeliveryStatus, Destination
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


def dead_letters(destination: str) -> list[dict[str, Any]]:
    """Every record of the destination's dead-letter topic, with its headers (`update` is
    None for a letter that cannot be decoded)."""
    settings = ConsumerSettings(destination=Destination(destination))
    topic = Topics(settings.kafka.topic_prefix).dlq(settings.dead_letter_group)
    found: list[dict[str, Any]] = []

    def take(message: Any) -> None:
        headers = {k: (v or b"").decode(errors="replace") for k, v in (message.headers() or [])}
        found.append(
            {
                "offset": message.offset(),
                "partition": message.partition(),
                "update": _letter(message),
                **headers,
            }
        )

    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return found


def _letter(message: Any) -> dict[str, Any] | None:
    try:
        _, update = records.posting_update(message)
    except records.PoisonRecord:
        return None
    return update


def list_dead_letters(destination: str) -> None:
    for letter in dead_letters(destination):
        update = letter["update"]
        where = f"partition {letter['partition']} offset {letter['offset']}"
        if update is None:
            print(f"undecodable letter at {where}: {letter.get('jobpost.error')}")
            continue
        print(f"{update['posting_id']} version {update['version']} ({update['op']}): "
              f"{letter.get('jobpost.attempts')} attempts, {letter.get('jobpost.error')}")  # fmt: skip


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
    board: Board, message: Any, delivered: dict[str, int], topics: Topics, settings: ConsumerSettings
) -> tuple[str, list[Outgoing]]:
    """One letter: what to print, and what to write before committing past it."""
    group = settings.dead_letter_group
    update = _letter(message)
    if update is None:
        letter = dead_letter(topics, group, message, "undecodable dead letter")
        return f"undecodable letter at {message.partition()}/{message.offset()}: dead-lettered again", [
            letter
        ]
    label = f"{update['posting_id']} version {update['version']}"
    if delivered.get(update["posting_id"], -1) >= update["version"]:
        return f"{label}: skipped, a newer version was delivered", []
    deleted = update["op"] == "DELETED"
    try:
        await (board.close(update) if deleted else board.upsert(update))
    except DeliveryError as exc:
        letter = dead_letter(
            topics, group, message, f"redrive: {exc}",
            version=update["version"], posting_id=update["posting_id"],
        )  # fmt: skip
        return f"{label}: failed again, dead-lettered again: {exc}", [letter]
    delivered[update["posting_id"]] = update["version"]
    source = dict(message.headers() or []).get("jobpost.source_partition", b"0")
    state = delivery_state(
        settings.destination,
        update["posting_id"],
        status=DeliveryStatus.CLOSED if deleted else DeliveryStatus.DELIVERED,
        delivered_version=update["version"],
        attempts=1,
    )
    return f"{label}: delivered", [state_record(topics.deliveries, int(source), state)]


def _delivered_versions(settings: ConsumerSettings) -> dict[str, int]:
    versions: dict[str, int] = {}

    def take(message: Any) -> None:
        try:
            found, posting_id, state = records.delivery_state(message)
        except records.PoisonRecord:
            return
        if found == settings.destination and state is not None and state.delivered_version is not None:
            versions[posting_id] = state.delivered_version

    topic = Topics(settings.kafka.topic_prefix).deliveries
    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return versions
