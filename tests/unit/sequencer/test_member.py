"""The member's watch over its sessions: a failed session is replaced, and so at once is a
session whose transaction stays open too long (a Kafka client call past its own timeout,
which no thread can interrupt): it is abandoned, its news no longer count, and only when
too many abandoned sessions are still blocked does the member give up. A member embedded
in the API then pauses and starts again, never ending its process. Sessions here are
stand-ins that only open and close transactions and report: what is watched is the
member's logic, not Kafka (that the next session fences a stuck one is
tests/integration/sequencer/test_stuck_session.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from runtime.kafka import KafkaSettings
from sequencer import member as member_module
from sequencer.clock import BrokerClock
from sequencer.config import SequencerSettings
from sequencer.member import _MAX_STUCK, Sequencer, SequencerFailed, run_in_process
from sequencer.watch import TransactionTimer

KAFKA = KafkaSettings(bootstrap_servers="127.0.0.1:1", topic_prefix="unit")  # no broker is asked


def settings(**changes: Any) -> SequencerSettings:
    defaults = {"transaction_timeout_ms": 100, "stuck_after_s": STUCK_AFTER_S, "instance_id": "unit-member"}
    return SequencerSettings(kafka=KAFKA, **{**defaults, **changes})


# The member's timings, shortened to what stand-ins need: a transaction open 0.1 s is stuck,
# the watch looks every 10 ms, a failed session is replaced after 10 ms (doubling).
STUCK_AFTER_S = 0.1
WATCH_EVERY_S = 0.01
FIRST_BACKOFF_S = 0.01


class StandIn:
    """A session that runs `script(self)` and counts itself."""

    started: list[StandIn] = []
    script: Callable[[StandIn], None] = staticmethod(lambda session: None)

    def __init__(
        self, _settings: SequencerSettings, stopping: threading.Event, report: Any, _clock: BrokerClock
    ):
        self.stopping = stopping
        self.report = report
        self.came_up = True
        self.abandoned = threading.Event()
        self.released = threading.Event()  # its consumer closed, so it left the group
        self.transaction = TransactionTimer()
        StandIn.started.append(self)

    def abandon(self) -> None:
        self.abandoned.set()

    def release(self) -> None:
        self.released.set()

    def run(self) -> None:
        type(self).script(self)


def member(script: Callable[[StandIn], None], **changes: Any) -> Sequencer:
    StandIn.started = []
    StandIn.script = staticmethod(script)  # type: ignore[assignment]
    return Sequencer(
        settings(**changes),
        session=StandIn,  # type: ignore[arg-type]
        watch_every_s=WATCH_EVERY_S,
        first_backoff_s=FIRST_BACKOFF_S,
    )


def run_until(sequencer: Sequencer, done: Callable[[], bool], seconds: float) -> BaseException | None:
    """Run the member on a thread until `done()` or it ends, for `seconds` at most; stop it;
    what run() raised, if anything."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            sequencer.run()
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + seconds
    while thread.is_alive() and not done() and time.monotonic() < deadline:
        time.sleep(0.005)
    sequencer.stop()
    thread.join(5)
    assert not thread.is_alive(), "the member did not stop"
    return raised[0] if raised else None


def test_a_session_stuck_in_its_transaction_is_abandoned_and_replaced_at_once() -> None:
    released = threading.Event()  # a client call that returns only when the test says so
    stale_news_sent = threading.Event()

    def first_sticks(session: StandIn) -> None:
        if len(StandIn.started) == 1:
            with session.transaction.open():
                released.wait()
            session.report(assigned=frozenset({0, 1, 2}))  # news from a session given up on
            stale_news_sent.set()
            return
        session.report(session_up=True, assigned=frozenset({4}))
        session.stopping.wait()

    sequencer = member(first_sticks)
    statuses: list[frozenset[int]] = []
    replaced_after: list[float] = []

    def replaced_then_stale_news_sent() -> bool:
        if not replaced_after:
            if sequencer.status.assigned != {4}:
                return False
            replaced_after.append(time.monotonic() - started)
            released.set()  # the replacement is up; now the stuck call returns
        sent = stale_news_sent.is_set()
        statuses.append(sequencer.status.assigned)  # after the stale news, once it was sent
        return sent

    started = time.monotonic()
    raised = run_until(sequencer, replaced_then_stale_news_sent, 3)

    assert raised is None
    assert stale_news_sent.is_set()
    assert len(StandIn.started) == 2
    first, second = StandIn.started
    assert first.abandoned.is_set() and not second.abandoned.is_set()
    assert set(statuses) == {frozenset({4})}  # the abandoned session's news never counted
    assert replaced_after[0] < 1  # stuck_after_s (0.1 s), the next look, a short backoff


def test_too_many_sessions_stuck_at_once_make_the_member_give_up() -> None:
    blocked = threading.Event()  # never set: client calls that never return

    def stuck(session: StandIn) -> None:
        with session.transaction.open():
            blocked.wait()

    started = time.monotonic()
    raised = run_until(member(stuck), lambda: False, 10)

    assert isinstance(raised, SequencerFailed)
    assert "blocked in Kafka client calls" in str(raised)
    assert "test_member.py" in str(raised)  # it says where the stuck thread is
    assert len(StandIn.started) == _MAX_STUCK + 1
    assert all(session.abandoned.is_set() for session in StandIn.started)
    # The last one's consumer leaves the group: no successor takes its place for a while.
    assert [s.released.is_set() for s in StandIn.started] == [False] * _MAX_STUCK + [True]
    assert time.monotonic() - started < 2  # stuck_after_s (0.1 s) each, and short backoffs


def test_transactions_that_end_in_time_never_trip_the_watch() -> None:
    def busy(session: StandIn) -> None:
        while not session.stopping.is_set():
            with session.transaction.open():
                time.sleep(STUCK_AFTER_S / 5)  # well inside stuck_after_s, each one

    # Many transactions, together many times stuck_after_s, none of them stuck.
    assert run_until(member(busy), lambda: False, 6 * STUCK_AFTER_S) is None
    assert len(StandIn.started) == 1


def test_a_failed_session_is_replaced_by_a_new_one() -> None:
    def fails_once(session: StandIn) -> None:
        if len(StandIn.started) == 1:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced"))
        session.report(session_up=True)
        session.stopping.wait()

    sequencer = member(fails_once)

    assert run_until(sequencer, lambda: sequencer.status.session_up, 3) is None
    assert len(StandIn.started) == 2


def test_a_dynamic_member_replaces_a_stuck_session_whose_consumer_leaves_the_group() -> None:
    blocked = threading.Event()  # never set

    def first_sticks(session: StandIn) -> None:
        if len(StandIn.started) == 1:
            with session.transaction.open():
                blocked.wait()
        session.report(session_up=True, assigned=frozenset({1}))
        session.stopping.wait()

    sequencer = member(first_sticks, instance_id=None)
    raised = run_until(sequencer, lambda: sequencer.status.assigned == {1}, 3)

    assert raised is None
    assert len(StandIn.started) == 2
    first, second = StandIn.started
    # Its successor is a new member of the group: the stuck one's consumer leaves, so the
    # rebalance does not wait for a consumer that never polls again.
    assert first.abandoned.is_set() and first.released.is_set()
    assert not second.released.is_set()


def test_an_embedded_member_that_gives_up_pauses_and_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(member_module, "PAUSE_AFTER_FAILURE_S", (0.05, 0.05))
    blocked = threading.Event()  # never set: client calls that never return

    def stuck_until_the_fifth(session: StandIn) -> None:
        if len(StandIn.started) <= _MAX_STUCK + 1:
            with session.transaction.open():
                blocked.wait()
        session.report(session_up=True, assigned=frozenset({2}))
        session.stopping.wait()

    sequencer = member(stuck_until_the_fifth)
    seen: list[member_module.SequencerStatus] = []
    thread = threading.Thread(target=run_in_process, args=(sequencer,), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while (status := sequencer.status).assigned != {2} and time.monotonic() < deadline:
        seen.append(status)
        time.sleep(0.02)
    sequencer.stop()
    thread.join(5)

    assert not thread.is_alive(), "run_in_process did not end on stop()"
    assert status.assigned == {2}  # it started again, and its new session serves
    failed = [s.failed for s in seen if s.failed]
    assert failed and "blocked in Kafka client calls" in failed[0]  # readiness can say why
    assert all(not s.session_up for s in seen if s.failed)
