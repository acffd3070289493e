"""The API's side of the sequencer: send a command, wait for its reply.

Commands are produced keyed by posting id (so they land on the posting's partition).
Replies are read by one thread from every partition of `jobpost.replies`, starting at
the end as it was at start-up, and handed to the waiting request by the correlation id
this API made for it: never by a client-supplied value, so two clients that happen to use
one Idempotency-Key never receive each other's answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from runtime import records, write_stages
from runtime.kafka import KafkaSettings, end_offset, is_record, poll_batch
from schemas import codec
from schemas.model import Command, Reply
from schemas.topics import Topics

log = logging.getLogger(__name__)


class SequencingTimeout(Exception):
    """No reply came within the deadline; the command may still be applied later."""


class CommandClient:
    def __init__(self, kafka: KafkaSettings) -> None:
        self.kafka = kafka
        self.topics = Topics(kafka.topic_prefix)
        self._producer = Producer(kafka.producer_config(**{"linger.ms": 1}))
        # correlation id -> the request waiting for its reply (and when the reply was read)
        self._waiting: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[tuple[Reply, float]]]] = {}
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.ready = threading.Event()

    def start(self) -> None:
        for target, name in ((self._read_replies, "replies"), (self._serve_producer, "command-producer")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)
        self._producer.flush(5)

    async def send(self, command: Command, timeout_s: float) -> Reply:
        """Produce the command and wait for the sequencer's reply."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[Reply, float]] = loop.create_future()
        correlation_id = random_id()
        # A request without an Idempotency-Key gets the correlation id as its request id
        # (Command.keyed: the sequencer keeps no key nobody can repeat).
        command = dataclasses.replace(
            command, correlation_id=correlation_id, request_id=command.request_id or correlation_id
        )
        self._waiting[correlation_id] = (loop, future)
        timing = write_stages.current()
        sent = time.perf_counter()

        def delivered(error: KafkaError | None, _message: Message) -> None:
            if error is not None:
                loop.call_soon_threadsafe(_fail, future, SequencingTimeout(f"command not written: {error}"))
            else:
                write_stages.observe("command_written", time.perf_counter() - sent)

        try:
            self._producer.produce(
                self.topics.commands,
                key=command.posting_id,
                value=codec.commands().encode(command),
                on_delivery=delivered,
            )
            if timing is not None:
                write_stages.observe("accepted", sent - timing.started)
            reply, replied = await asyncio.wait_for(future, timeout_s)
        except (TimeoutError, BufferError) as exc:
            raise SequencingTimeout(str(exc) or "no reply in time") from exc
        finally:
            self._waiting.pop(correlation_id, None)
        resumed = time.perf_counter()
        write_stages.observe("sequenced", replied - sent)
        write_stages.observe("resume", resumed - replied)
        if timing is not None:
            timing.resumed = resumed
        return reply

    def _serve_producer(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.1)

    def _read_replies(self) -> None:
        while not self._stop.is_set():
            try:
                self._read_replies_once()
            except Exception:  # keep the API alive; requests waiting meanwhile get 503
                log.exception("reply reader failed; restarting it")
                self._stop.wait(1.0)

    def _read_replies_once(self) -> None:
        consumer = Consumer(self.kafka.consumer_config(f"replies-{uuid.uuid4().hex}"))
        try:
            consumer.assign(_ends(consumer, self.topics.replies))
            self.ready.set()
            while not self._stop.is_set():
                for message in poll_batch(consumer, 500, 0.1):
                    if is_record(message):
                        self._dispatch(message)
        finally:
            self.ready.clear()
            consumer.close()

    def _dispatch(self, message: Message) -> None:
        try:
            reply = records.reply(message)
        except records.PoisonRecord as exc:
            records.note_poison("replies", message, exc.reason)
            return
        waiting = self._waiting.get(reply.correlation_id)
        if waiting is not None:
            loop, future = waiting
            loop.call_soon_threadsafe(_resolve, future, (reply, time.perf_counter()))


def random_id() -> str:
    """128 random bits as hex: uuid4 without its system call, which gave the GIL away in
    the middle of every request."""
    return f"{random.getrandbits(128):032x}"


def _resolve(future: asyncio.Future[tuple[Reply, float]], reply: tuple[Reply, float]) -> None:
    if not future.done():
        future.set_result(reply)


def _fail(future: asyncio.Future[tuple[Reply, float]], exc: Exception) -> None:
    if not future.done():
        future.set_exception(exc)


def _ends(consumer: Consumer, topic: str) -> list[TopicPartition]:
    """Every partition of the topic at its current end, resolved now (not lazily), so no
    reply written after this call can be skipped."""
    metadata = consumer.list_topics(topic, timeout=30).topics[topic]
    return [TopicPartition(topic, n, end_offset(consumer, topic, n, timeout=30)) for n in metadata.partitions]
