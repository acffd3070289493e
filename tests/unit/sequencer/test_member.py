"""The member's watch over its sessions: a failed session is replaced, and a session whose
transaction stays open long after Kafka would have aborted it (a Kafka client call past its
own timeout, which no thread can interrupt) makes the member give up, so the process exits
and its supervisor restarts it. Sessions here are stand-ins that only open and close
transactions: what is watched is the member's logic, not Kafka."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from pydantic import ValidationError

from runtime.kafka import KafkaSettings
from sequencer.clock import BrokerClock
from sequencer.config import SequencerSettings
from sequencer.member import Sequencer, SequencerFailed
from sequencer.watch import TransactionTimer

KAFKA = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic_prefix="unit")  # no broker is asked


def settings(**changes: Any) -> SequencerSettings:
    return SequencerSettings(kafka=KAFKA, **{"transaction_timeout_ms": 100, "stuck_after_s": 0.5, **changes})


class StandIn:
    """A session that runs `script(self)` and counts itself."""

    started: list[StandIn] = []
    script: Callable[[StandIn], None] = staticmethod(lambda session: None)

    def __init__(
        self, _settings: SequencerSettings, stopping: threading.Event, _report: Any, _clock: BrokerClock
    ):
        self.stopping = stopping
        self.came_up = True
        self.transaction = TransactionTimer()
        StandIn.started.append(self)

    def run(self) -> None:
        type(self).script(self)


def member(script: Callable[[StandIn], None], **changes: Any) -> Sequencer:
    StandIn.started = []
    StandIn.script = staticmethod(script)  # type: ignore[assignment]
    return Sequencer(settings(**changes), session=StandIn)  # type: ignore[arg-type]


def run_for_at_most(sequencer: Sequencer, seconds: float) -> BaseException | None:
    """Run the member on a thread; stop it after `seconds`; what run() raised, if anything."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            sequencer.run()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    sequencer.stop()
    thread.join(5)
    assert not thread.is_alive(), "the member did not stop"
    return raised[0] if raised else None


def test_a_session_stuck_in_its_transaction_makes_the_member_give_up() -> None:
    blocked = threading.Event()  # never set: a client call that never returns

    def stuck(session: StandIn) -> None:
        with session.transaction.open():
            blocked.wait()

    started = time.monotonic()
    raised = run_for_at_most(member(stuck), 10)

    assert isinstance(raised, SequencerFailed)
    assert "open for" in str(raised)
    assert 0.5 <= time.monotonic() - started < 5  # stuck_after_s, then the next look
    assert len(StandIn.started) == 1  # not replaced: a session stuck in C cannot be ended


def test_transactions_that_end_in_time_never_trip_the_watch() -> None:
    def busy(session: StandIn) -> None:
        while not session.stopping.is_set():
            with session.transaction.open():
                time.sleep(0.2)  # well inside stuck_after_s, each one

    assert run_for_at_most(member(busy), 2) is None
    assert len(StandIn.started) == 1


def test_a_failed_session_is_replaced_by_a_new_one() -> None:
    def fails_once(session: StandIn) -> None:
        if len(StandIn.started) == 1:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced"))
        session.stopping.wait()

    assert run_for_at_most(member(fails_once), 2) is None
    assert len(StandIn.started) == 2


def test_the_watch_must_outlast_the_transaction_timeout() -> None:
    with pytest.raises(ValidationError, match="longer than the transaction timeout"):
        settings(transaction_timeout_ms=6000, stuck_after_s=5)
