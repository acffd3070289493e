"""Records a reader writes because of a record it read (a dead letter, a delivery state),
and the rule that a source offset is committed only after Kafka acknowledged them.

`producer.flush()` returning says nothing about success: a record can still fail (its
topic is gone, the broker refused it) and only its delivery report says so. So these
helpers wait for the reports and produce a refused record again, with backoff, until it
is acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

log = logging.getLogger(__name__)

Headers = list[tuple[str, str | bytes | None]]


@dataclass(frozen=True)
class Outgoing:
    topic: str
    key: str | bytes | None
    value: bytes | None
    partition: int | None = None
    headers: Headers | None = None

    def produce(
        self, producer: Producer, on_delivery: Callable[[KafkaError | None, Message], None] | None = None
    ) -> None:
        options: dict[str, Any] = {"on_delivery": on_delivery} if on_delivery else {}
        if self.partition is not None:
            options["partition"] = self.partition
        if self.headers:
            options["headers"] = self.headers
        producer.produce(self.topic, key=self.key, value=self.value, **options)


Acknowledgement = tuple[KafkaError | None, int]  # (refusal, offset: -1 when refused)


def _settle(future: asyncio.Future[Acknowledgement], result: Acknowledgement) -> None:
    if not future.done():
        future.set_result(result)


def _backoff(attempt: int, max_wait_s: float) -> float:
    return float(min(max_wait_s, 0.5 * 2**attempt))


def deliver_all(
    producer: Producer, records: list[Outgoing], should_stop: Callable[[], bool], max_wait_s: float = 30.0
) -> bool:
    """Produce every record and return once Kafka acknowledged each one (True), producing
    refused ones again after a backoff; False when `should_stop()` ended the wait first."""
    pending = list(records)
    attempt = 0
    while pending:
        failed: list[Outgoing] = []
        for record in pending:
            try:
                record.produce(producer, _collect(record, failed))
            except (BufferError, KafkaException) as exc:
                log.warning("could not produce to %s: %s", record.topic, exc)
                producer.poll(0.1)
                failed.append(record)
        while producer.flush(1.0) > 0:
            if should_stop():
                return False
        if not failed:
            return True
        log.warning(
            "%d records were not acknowledged (e.g. to %s); producing them again",
            len(failed),
            failed[0].topic,
        )
        deadline = time.monotonic() + _backoff(attempt, max_wait_s)
        while time.monotonic() < deadline:
            if should_stop():
                return False
            time.sleep(0.1)
        attempt += 1
        pending = failed
    return True


def _collect(record: Outgoing, failed: list[Outgoing]) -> Callable[[KafkaError | None, Message], None]:
    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            log.warning("%s refused a record: %s", record.topic, error)
            failed.append(record)

    return on_delivery


async def deliver(producer: Producer, record: Outgoing, max_wait_s: float = 30.0) -> int:
    """Produce one record and return the offset Kafka acknowledged it at, producing it
    again after a backoff while it is refused. Whichever thread serves `producer.poll()`
    (the event loop's, or one of its own), the delivery report resolves the loop's future
    through `call_soon_threadsafe`, in the order the reports arrive."""
    loop = asyncio.get_running_loop()
    attempt = 0
    while True:
        acknowledged: asyncio.Future[Acknowledgement] = loop.create_future()

        def on_delivery(error: KafkaError | None, message: Message, done: Any = acknowledged) -> None:
            offset = message.offset()
            result: Acknowledgement = (error, offset if error is None and offset is not None else -1)
            loop.call_soon_threadsafe(_settle, done, result)

        refusal: KafkaError | Exception
        try:
            record.produce(producer, on_delivery)
            error, offset = await acknowledged
        except (BufferError, KafkaException) as exc:
            refusal = exc
        else:
            if error is None:
                return offset
            refusal = error
        log.warning("%s refused a record (%s); producing it again", record.topic, refusal)
        await asyncio.sleep(_backoff(attempt, max_wait_s))
        attempt += 1
