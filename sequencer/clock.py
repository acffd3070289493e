"""The time the sequencer decides by: Kafka's, never its host's wall clock.

`jobpost.commands` and `jobpost.replies` have `message.timestamp.type=LogAppendTime`, so
every command read and every reply Kafka acknowledges carries the time a broker appended
it. Each such time is a lower bound of the broker's clock at the moment the sequencer sees
it; the clock keeps the best (highest) such bound and carries it forward with the host's
monotonic clock. A command's deadline is a broker time too (its append time plus its
budget), so minutes of skew between the API's host, the sequencer's host and the brokers'
wall clocks change no decision: only the brokers' clocks among themselves must agree, as
Kafka's own time-based retention already asks.

A bound carried forward loses `max_drift` of a second per second (a monotonic clock that
runs fast must never carry the estimate past the broker's time), so the estimate stays a
lower bound: a command is never expired before its deadline, and one is applied after
it by at most the age of the freshest bound (an acknowledgement of the last transaction,
or the probe a session sends before its first decision).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, KafkaError, Message

MAX_DRIFT = 1e-3  # 1,000 ppm: far more than a crystal's or an NTP-disciplined clock's error


class BrokerClock:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic, max_drift: float = MAX_DRIFT) -> None:
        self._monotonic = monotonic
        self._max_drift = max_drift
        self._offset_ms: float | None = None  # broker time minus monotonic time, as bounded so far
        self._bounded_at = 0.0  # monotonic seconds when the offset was last raised

    @property
    def known(self) -> bool:
        """Whether any broker time has been seen (before that, now_millis refuses)."""
        return self._offset_ms is not None

    def observe(self, broker_millis: int) -> None:
        """A time some broker has certainly reached by now (a LogAppendTime just read or
        acknowledged)."""
        at = self._monotonic()
        offset = broker_millis - at * 1000
        if self._offset_ms is None or offset > self._carried(at):
            self._offset_ms, self._bounded_at = offset, at

    def acknowledged(self, error: KafkaError | None, message: Message) -> None:
        """A producer's delivery report: the time its broker appended the record."""
        if error is None:
            kind, millis = message.timestamp()
            if kind == TIMESTAMP_LOG_APPEND_TIME:
                self.observe(millis)

    def now_millis(self) -> int:
        """The broker's time now, never ahead of it."""
        if self._offset_ms is None:
            raise LookupError("no broker time seen yet")
        at = self._monotonic()
        return int(at * 1000 + self._carried(at))

    def _carried(self, at: float) -> float:
        assert self._offset_ms is not None
        return self._offset_ms - (at - self._bounded_at) * 1000 * self._max_drift
