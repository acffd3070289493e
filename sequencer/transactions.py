"""What a session does with its transactional producer besides producing: calls Kafka
asks to repeat, the time Kafka tells, and which failures the session outlives.

librdkafka sorts a failed transactional call three ways: retriable (call it again: a
repeated commit commits once), abortable (`txn_requires_abort`: nothing of the transaction
is committed; abort it and start over from the last committed offsets) and fatal (the
producer is fenced by a successor, or broken: only a new session can go on). A broker that
dies or stalls makes calls time out and records undeliverable, which are the first two:
the session aborts and reads the transaction's partitions again, staying in its group, so
no healthy member rebalances for a broker's fault. A commit whose outcome stays unknown
(retried until the transaction timeout) is not guessed at: the session ends, and the next
one starts from what Kafka committed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, KafkaError, KafkaException, Message, Producer
from prometheus_client import Counter

from sequencer.clock import BrokerClock

log = logging.getLogger(__name__)

RETRIED = Counter(
    "jobpost_sequencer_transaction_retries_total",
    "Transactional calls Kafka asked to repeat (a coordinator or a leader moving)",
)
T = TypeVar("T")


class ClockUnknown(RuntimeError):
    """Kafka did not tell the time: jobpost.replies does not stamp LogAppendTime."""


def retrying(call: Callable[[], T], within_s: float, what: str) -> T:
    """`call()`, repeated while it fails with a retriable error that does not require an
    abort, for at most `within_s`; the last error is raised."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            return call()
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if error.fatal() or error.txn_requires_abort():
                raise
            if not (error.retriable() or error.code() == KafkaError._TIMED_OUT):
                raise
            if time.monotonic() > deadline:
                raise
            RETRIED.inc()
            log.info("%s: %s; trying again", what, error)


def abortable(exc: KafkaException) -> bool:
    """Whether the transaction failed without committing anything, and the producer can
    go on after aborting it."""
    error: KafkaError = exc.args[0]
    return bool(error.txn_requires_abort()) and not error.fatal()


class ToldTime:
    """The broker times a producer's acknowledgements carry, for the member's clock."""

    def __init__(self, clock: BrokerClock) -> None:
        self.clock = clock

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        """A delivery report of a record to a LogAppendTime topic (jobpost.replies)."""
        if error is None:
            kind, millis = message.timestamp()
            if kind == TIMESTAMP_LOG_APPEND_TIME:
                self.clock.observe(millis)

    def probe(self, producer: Producer, topic: str) -> None:
        """Ask Kafka the time before a first decision (a member that starts behind a backlog
        would otherwise judge old commands by the newest of them): one empty record to
        `topic` in a transaction that is then aborted, so no read_committed reader sees it;
        its acknowledgement carries the broker's append time."""
        producer.begin_transaction()
        producer.produce(topic, key=b"", value=b"", partition=0, on_delivery=self)
        producer.flush(30)
        producer.abort_transaction(30)
        if not self.clock.known:
            raise ClockUnknown(f"{topic} does not stamp LogAppendTime: run `jobpost topics`")
