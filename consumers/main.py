"""Entry points: `jobpost consumer <linkedin|indeed>` and `jobpost dlq list|redrive`."""

from __future__ import annotations

import asyncio
import signal

import aiohttp
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client import start_http_server

from consumers.config import ConsumerSettings
from consumers.redrive import dead_letters, delivered_versions, make_board, redrive_one
from consumers.runner import DeliveryRunner
from runtime.kafka import coordinates, is_record
from runtime.outbox import deliver_all
from runtime.topics import check_at_start
from schemas.model import Destination
from schemas.topics import Topics


def run_consumer(destination: str) -> None:
    settings = ConsumerSettings(destination=Destination(destination))
    check_at_start(settings.kafka)
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.metrics_host)

    async def main() -> None:
        connector = aiohttp.TCPConnector(limit=settings.max_in_flight, ssl=settings.board_tls())
        async with aiohttp.ClientSession(connector=connector) as client:
            runner = DeliveryRunner(settings, make_board(settings, client))
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, runner.stop)
            await runner.run()

    asyncio.run(main())


def list_dead_letters(destination: str) -> None:
    for letter in dead_letters(ConsumerSettings(destination=Destination(destination))):
        update, error = letter.update, letter.error
        if update is None:
            print(f"undecodable letter at partition {letter.partition} offset {letter.offset}: {error}")
            continue
        print(f"{update.posting_id} version {update.version} ({update.op}): "
              f"{letter.attempts} attempts, {error}")  # fmt: skip


def redrive(destination: str) -> None:
    """Attempt every dead letter once more, skipping versions a newer delivery superseded.
    A letter that fails again is dead-lettered again (so a later redrive sees it); the
    group `<prefix>-<destination>-redrive` commits past a letter only once what it led to
    (its delivery state, or its new dead letter) is acknowledged by Kafka."""
    settings = ConsumerSettings(destination=Destination(destination))
    topics = Topics(settings.kafka.topic_prefix)
    delivered = delivered_versions(settings.kafka, settings.destination)

    async def main() -> None:
        consumer = Consumer(settings.kafka.consumer_config(f"{settings.group}-redrive"))
        consumer.subscribe([topics.dlq(settings.component)])
        producer = Producer(settings.kafka.producer_config())
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=settings.board_tls())) as client:
            board = make_board(settings, client)
            idle = 0
            while idle < 20:
                message = consumer.poll(0.25)
                if message is None or not is_record(message):
                    idle += 1
                    continue
                idle = 0
                redriven = await redrive_one(board, message, lambda p: delivered.get(p, -1), settings)
                if redriven.outcome == "delivered" and redriven.update is not None:
                    delivered[redriven.update.posting_id] = redriven.update.version
                if not deliver_all(producer, redriven.outgoing, lambda: False):
                    raise RuntimeError("redrive: Kafka did not acknowledge its writes")
                topic, partition, offset = coordinates(message)
                past = TopicPartition(topic, partition, offset + 1)
                consumer.commit(offsets=[past], asynchronous=False)
                print(redriven.report)
        consumer.close()

    asyncio.run(main())
