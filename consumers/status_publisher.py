"""This member's status of its board on `jobpost.board-status` (`schemas.board_status`),
keyed `{board}/{member}`: every `status_interval_s`, at once when the circuit changes, its
share changes or its lanes are paused or resumed, and a tombstone when the member stops,
so the API's `GET /ops/boards` shows what each member holds (a member that died without a
tombstone shows as stale). Produced without waiting, as the timeline's events are: a status
Kafka refuses is logged and the next one replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket

from confluent_kafka import KafkaException, Producer

from consumers.clock import Clock
from consumers.destination.shared import SharedDestination
from consumers.destination.status import board_status
from runtime.outbox import Outgoing
from schemas import codec
from schemas.board_status import BoardStatus
from schemas.topics import Topics

log = logging.getLogger(__name__)
LEAVE_S = 5.0  # how long a stopping member waits for Kafka to take its tombstone
CHECK_S = 1.0  # how often a pause that started or ended is looked for between wake-ups


def member_name() -> str:
    """This process among the group's members: its host and process id."""
    return f"{socket.gethostname()}-{os.getpid()}"


class StatusPublisher:
    def __init__(
        self,
        producer: Producer,
        topics: Topics,
        destination: SharedDestination,
        clock: Clock,
        interval_s: float,
        member: str | None = None,
    ) -> None:
        self.producer = producer
        self.topic = topics.board_status
        self.destination = destination
        self.clock = clock
        self.interval_ms = round(interval_s * 1000)
        self.member = member or member_name()
        self._changed = asyncio.Event()
        destination.access.wakes(self._changed)
        self._published: BoardStatus | None = None

    def status(self) -> BoardStatus:
        tasks = self.destination.tasks
        return board_status(
            self.destination.access,
            None if tasks is None else tasks.book,
            self.member,
            self.interval_ms,
            self.clock.now_ms(),
        )

    async def run(self) -> None:
        """Publish until cancelled."""
        while True:
            self._changed.clear()
            try:
                self._publish_due()
            except Exception:  # a status not taken is that status's loss: the next one is tried
                log.exception("%s: could not take this member's board status", self.destination.name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(CHECK_S, self.interval_ms / 1000))

    def _publish_due(self) -> None:
        """Publish the status now if it changed, or its interval has passed."""
        status = self.status()
        last = self._published
        if (
            last is None
            or _moved(last, status)
            or status.published_at - last.published_at >= self.interval_ms
        ):
            self._produce(status.key, codec.board_statuses().encode(status))
            self._published = status

    def leave(self) -> None:
        """The member stops: its status is removed (a tombstone, waited for a few seconds)."""
        self._produce(f"{self.destination.name.value}/{self.member}", None)
        self.producer.flush(LEAVE_S)

    def _produce(self, key: str, value: bytes | None) -> None:
        def on_delivery(error: object, _message: object) -> None:
            if error is not None:
                log.warning("%s refused this member's board status: %s", self.topic, error)

        try:  # its report is served by the consume loop's thread, the producer's only server
            Outgoing(self.topic, key, value).produce(self.producer, on_delivery)
        except (BufferError, KafkaException) as exc:
            log.warning("could not produce this member's board status to %s: %s", self.topic, exc)


def _moved(before: BoardStatus, now: BoardStatus) -> bool:
    """A change worth telling at once: the circuit, a pause, the member's share."""
    return (before.circuit, before.paused_reason, before.share) != (now.circuit, now.paused_reason, now.share)
