"""The API's side of the sequencer: send a command, wait for its reply.

Commands are produced keyed by posting id (so they land on the posting's partition).
Replies are read by one thread from every partition of `jobpost.replies`, starting at
the end as it was at start-up, and handed to the waiting request by the correlation id
this API made for it: never by a client-supplied value, so two clients that happen to use
one Idempotency-Key never receive each other's answers.

A command carries a budget: the sequencer applies it only within that long of its append
time (the broker's clock) and answers EXPIRED after, in the transaction that commits its
offset, so it is never applied later. A send therefore ends one of three ways, as Kafka's
own producer does: a reply (the verdict, EXPIRED included), `NotWritten` (the command
provably never reached the log), or `OutcomeUnknown` (no verdict in time; it says how soon
the outcome is settled for good).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import random
import threading
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from runtime import records, write_stages
from runtime.kafka import IDLE_POLL_S, KafkaSettings, end_offset, is_record, poll_batch
from runtime.kafka_clients import KafkaClients
from schemas import codec
from schemas.model import Command, Reply
from schemas.topics import ReaderGroup, Topics

log = logging.getLogger(__name__)


# A refusal of these never let the command into the log: nothing can ever apply it. Any
# other failure (a timeout above all) may come after the broker appended it.
_NOT_WRITTEN = {
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.INVALID_RECORD,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError._UNKNOWN_TOPIC,
    KafkaError._UNKNOWN_PARTITION,
    KafkaError._PURGE_QUEUE,
}
# The sequencer's time is a lower bound of the broker's, behind it by up to one round trip;
# the brokers' clocks may differ by a little too.
_CLOCK_MARGIN_S = 1.0


class NotWritten(Exception):
    """The command never reached `jobpost.commands`: nothing can ever apply it."""


class OutcomeUnknown(Exception):
    """No verdict in time: the command may have been applied, or may still be within
    `settled_in_s` from now; after that it is applied or never will be."""

    def __init__(self, detail: str, settled_in_s: int) -> None:
        super().__init__(detail)
        self.settled_in_s = settled_in_s


class CommandClient:
    def __init__(self, kafka: KafkaSettings, budget_s: float, give_up_s: float) -> None:
        self.kafka = kafka
        self.topics = Topics(kafka.topic_prefix)
        self.budget_s = budget_s
        # A command the producer could not write by the time the API stops waiting (the
        # write timeout) is given up: it is appended then or never, so a late append cannot
        # start its budget long after the client had its answer. Not sooner: a command
        # held up by a leader's failover (~9 s) may still be applied in time.
        self.give_up_s = give_up_s
        timeout_ms = max(1, int(give_up_s * 1000))
        self._producer = KafkaClients(kafka).producer(
            linger_ms=1, give_up_after_ms=timeout_ms, write_path=True
        )
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

    async def send(self, command: Command, wait_s: float) -> Reply:
        """Produce the command with this client's budget and wait up to `wait_s` for the
        sequencer's verdict; `NotWritten` or `OutcomeUnknown` without one."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[Reply, float]] = loop.create_future()
        correlation_id = random_id()
        # A request without an Idempotency-Key gets the correlation id as its request id
        # (Command.keyed: the sequencer keeps no key nobody can repeat).
        command = dataclasses.replace(
            command,
            correlation_id=correlation_id,
            request_id=command.request_id or correlation_id,
            budget_ms=int(self.budget_s * 1000),
        )
        self._waiting[correlation_id] = (loop, future)
        timing = write_stages.current()
        sent = time.perf_counter()
        written: list[float] = []  # when Kafka acknowledged the command (the producer's thread sets it)

        def delivered(error: KafkaError | None, _message: Message) -> None:
            if error is None:
                written.append(time.perf_counter())
                write_stages.observe("command_written", written[0] - sent)
            elif error.code() in _NOT_WRITTEN:
                loop.call_soon_threadsafe(_fail, future, NotWritten(f"the command was refused: {error}"))
            else:  # perhaps appended after all: the verdict may still come
                log.warning("a command may not have been written: %s", error)

        try:
            self._producer.produce(
                self.topics.commands,
                key=command.posting_id,
                value=codec.commands().encode(command),
                on_delivery=delivered,
            )
            if timing is not None:
                write_stages.observe("accepted", sent - timing.started)
            reply, replied = await asyncio.wait_for(future, wait_s)
        except (BufferError, KafkaException) as exc:  # produce() refused to queue it
            raise NotWritten(f"the command could not be queued: {exc}") from exc
        except TimeoutError as exc:
            raise OutcomeUnknown(
                f"no verdict from the sequencer within {wait_s:.0f} s", self._settled_in(sent, written)
            ) from exc
        finally:
            self._waiting.pop(correlation_id, None)
        resumed = time.perf_counter()
        write_stages.observe("sequenced", replied - sent)
        write_stages.observe("resume", resumed - replied)
        if timing is not None:
            timing.resumed = resumed
        return reply

    def _settled_in(self, sent: float, written: list[float]) -> int:
        """Seconds from now after which the command is applied or never will be: its
        budget runs from its append time, which came before Kafka's acknowledgement, or,
        unacknowledged, before the producer gives it up."""
        appended_by = written[0] if written else sent + self.give_up_s
        return max(1, math.ceil(appended_by + self.budget_s + _CLOCK_MARGIN_S - time.perf_counter()))

    def _serve_producer(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(IDLE_POLL_S)  # returns at each report

    def _read_replies(self) -> None:
        while not self._stop.is_set():
            try:
                self._read_replies_once()
            except Exception:  # keep the API alive; requests waiting meanwhile get 504
                log.exception("reply reader failed; restarting it")
                self._stop.wait(1.0)

    def _read_replies_once(self) -> None:
        consumer = KafkaClients(self.kafka).reader(
            self.topics.reader_group(ReaderGroup.REPLIES), write_path=True
        )
        try:
            consumer.assign(_ends(consumer, self.topics.replies))
            self.ready.set()
            while not self._stop.is_set():
                for message in poll_batch(consumer, 500, IDLE_POLL_S):  # returns at a reply
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
