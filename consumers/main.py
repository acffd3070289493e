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
from consumers.runner import Board, DeliveryRunner
from schemas import codec
from schemas.deliveries import record_delivery
from schemas.replay import replay
from schemas.topics import Topics


def make_board(settings: ConsumerSettings, client: aiohttp.ClientSession) -> Board:
    if settings.destination == "linkedin":
        return LinkedInAdapter(client, settings.linkedin)
    return IndeedAdapter(client, settings.indeed)


def run_consumer(destination: str) -> None:
    settings = ConsumerSettings(destination=destination)  # type: ignore[arg-type]
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr="127.0.0.1")

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
    """Every record of the destination's dead-letter topic, with its headers."""
    settings = ConsumerSettings(destination=destination)  # type: ignore[arg-type]
    topic = Topics(settings.kafka.topic_prefix).dlq(destination)
    found: list[dict[str, Any]] = []

    def take(message: Any) -> None:
        update = codec.posting_updates().decode(message.value())
        headers = {k: v.decode() for k, v in (message.headers() or [])}
        found.append(
            {"offset": message.offset(), "partition": message.partition(), "update": update, **headers}
        )

    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return found


def list_dead_letters(destination: str) -> None:
    for letter in dead_letters(destination):
        update = letter["update"]
        print(f"{update['posting_id']} version {update['version']} ({update['op']}): "
              f"{letter.get('jobpost.attempts')} attempts, {letter.get('jobpost.error')}")  # fmt: skip


def redrive(destination: str) -> None:
    """Attempt every dead letter once more, skipping versions a newer delivery superseded.
    Progress is the consumer group `jobpost-<destination>-redrive` on the dead-letter topic."""
    settings = ConsumerSettings(destination=destination)  # type: ignore[arg-type]
    topics = Topics(settings.kafka.topic_prefix)
    delivered = _delivered_versions(settings, destination)

    async def main() -> None:
        consumer = Consumer(settings.kafka.consumer_config(f"{settings.group}-redrive"))
        consumer.subscribe([topics.dlq(destination)])
        producer = Producer(settings.kafka.producer_config())
        async with aiohttp.ClientSession() as client:
            board = make_board(settings, client)
            idle = 0
            while idle < 20:
                message = consumer.poll(0.25)
                if message is None or message.error():
                    idle += 1
                    continue
                idle = 0
                update = codec.posting_updates().decode(message.value())
                label = f"{update['posting_id']} version {update['version']}"
                if delivered.get(update["posting_id"], -1) >= update["version"]:
                    print(f"{label}: skipped, a newer version was delivered")
                else:
                    try:
                        deleted = update["op"] == "DELETED"
                        await (board.close(update) if deleted else board.upsert(update))
                        delivered[update["posting_id"]] = update["version"]
                        source = dict(message.headers() or []).get("jobpost.source_partition", b"0")
                        record_delivery(
                            producer,
                            topics.deliveries,
                            int(source),
                            destination=destination,
                            posting_id=update["posting_id"],
                            status="CLOSED" if deleted else "DELIVERED",
                            delivered_version=update["version"],
                            attempts=1,
                        )
                        print(f"{label}: delivered")
                    except DeliveryError as exc:
                        print(f"{label}: failed again: {exc}")
                consumer.commit(
                    offsets=[TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
                )
        consumer.close()

    asyncio.run(main())


def _delivered_versions(settings: ConsumerSettings, destination: str) -> dict[str, int]:
    versions: dict[str, int] = {}
    prefix = f"{destination}/".encode()

    def take(message: Any) -> None:
        if message.key().startswith(prefix) and message.value() is not None:
            state = codec.delivery_states().decode(message.value())
            if state["delivered_version"] is not None:
                versions[state["posting_id"]] = state["delivered_version"]

    topic = Topics(settings.kafka.topic_prefix).deliveries
    replay(settings.kafka, topic, range(settings.kafka.partitions), take)
    return versions
