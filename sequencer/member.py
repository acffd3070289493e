"""The sequencer: the one writer of each posting's versions.

A consumer group over `jobpost.commands`. For each partition it owns it knows, per posting
of the same partition of `jobpost.postings`, what deciding a command needs (version,
deleted, where the newest version lies, recent idempotency keys; never the text): in a
local store that mirrors the compacted changelog `jobpost.sequencer-state`, brought up to
date on assignment (sequencer.restore). Each poll becomes one Kafka
transaction: the PostingUpdates, the replies, the dead letters of commands it cannot read,
the changed postings' states for the changelog, and the command offsets
(`send_offsets_to_transaction` with the group metadata, so a zombie member is fenced). A
state names the offset of its posting's newest version as predicted when it is produced
(sequencer.placements: no wait for Kafka inside the transaction); a wrong prediction
is corrected in a transaction of its own right after the commit. The local store takes
the states, with the offsets Kafka acknowledged, once the transaction committed, so it
never holds what Kafka does not.

Any failure of a session (an aborted transaction, a fenced producer, a lost broker, a bug)
ends it: consumer, producer and in-memory state are thrown away and a new session starts
from the committed offsets and the changelog, so no state outlives what Kafka committed.
When no session has come up for `give_up_after_s`, `run()` raises, so the process exits
and its supervisor restarts it. So it does when a session's transaction has been open for
`stuck_after_s`: the broker has aborted it long since, so the session is blocked in a Kafka
client call that ignores its timeout, and a thread blocked in C cannot be stopped. Each
session runs on a thread of its own, which the member watches.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, replace

from confluent_kafka import KafkaException
from prometheus_client import Counter

from sequencer.clock import BrokerClock
from sequencer.config import SequencerSettings
from sequencer.session import Session

log = logging.getLogger(__name__)

# A session that failed because a broker died is usually replaced at once: the new one
# finds the moved leaders and coordinators (static membership keeps the partitions).
FIRST_BACKOFF_S = 0.1
_WATCH_EVERY_S = 0.5
SESSIONS = Counter("jobpost_sequencer_sessions_total", "Sequencer sessions started (restarts after failures)")


class SequencerFailed(RuntimeError):
    """No session could be brought up for too long, or one is stuck: the process should exit."""


@dataclass(frozen=True)
class SequencerStatus:
    """What the member serves right now, as one snapshot (readiness reads it from another
    thread; the session replaces it whole, never changes it)."""

    session_up: bool = False  # a session is consuming
    assigned: frozenset[int] = frozenset()  # restored and served by this member
    restoring: frozenset[int] = frozenset()  # assigned, state still being read from the log


class Sequencer:
    def __init__(self, settings: SequencerSettings, session: type[Session] = Session) -> None:
        self.settings = settings
        self._session_type = session
        self._stop = threading.Event()
        self._status = SequencerStatus()
        self._status_lock = threading.Lock()
        self.clock = BrokerClock()

    @property
    def status(self) -> SequencerStatus:
        return self._status

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        """Run sessions until stop(); a failed session is replaced after a short backoff."""
        backoff = FIRST_BACKOFF_S
        last_up = time.monotonic()
        while not self._stop.is_set():
            SESSIONS.inc()
            session = self._session_type(self.settings, self._stop, self._report, self.clock)
            try:
                self._watch(session)
                backoff = FIRST_BACKOFF_S
            except SequencerFailed:
                raise
            except Exception as exc:  # any failure ends the session, never the member
                log.warning("sequencer session ended: %r; a new one in %.1f s", exc, backoff,
                            exc_info=not isinstance(exc, KafkaException | TimeoutError))  # fmt: skip
            finally:
                if session.came_up:
                    last_up = time.monotonic()
                self._report(session_up=False, assigned=frozenset(), restoring=frozenset())
            if time.monotonic() - last_up > self.settings.give_up_after_s:
                raise SequencerFailed(
                    f"no sequencer session came up for {self.settings.give_up_after_s:.0f} s"
                )
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 2.0)  # a broker's failover takes seconds: try again soon

    def _watch(self, session: Session) -> None:
        """Run the session on a thread of its own until it ends, and raise what it raised;
        `SequencerFailed` once its transaction has been open for `stuck_after_s`."""
        failure: list[BaseException] = []

        def run() -> None:
            try:
                session.run()
            except BaseException as exc:  # noqa: BLE001 - handed to the member's thread, which raises it
                failure.append(exc)

        thread = threading.Thread(target=run, name="sequencer-session", daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(_WATCH_EVERY_S)
            stuck = session.transaction.open_for()
            if stuck > self.settings.stuck_after_s:
                raise SequencerFailed(
                    f"a sequencer transaction has been open for {stuck:.0f} s, long after Kafka "
                    "aborted it: its session is stuck in a Kafka client call"
                )
        if failure:
            raise failure[0]

    def _report(self, **changes: object) -> None:
        """A session's news: a new snapshot with these fields changed."""
        with self._status_lock:
            self._status = replace(self._status, **changes)  # type: ignore[arg-type]


def run_or_exit(sequencer: Sequencer) -> None:
    """Run the member; should it stop for good, exit the process at once (status 70) so its
    supervisor restarts it: a replica that cannot sequence must not go on looking alive, and
    a session stuck in the Kafka client would hold up an orderly exit."""
    try:
        sequencer.run()
    except BaseException:
        log.critical("the sequencer stopped; exiting so the supervisor restarts us", exc_info=True)
        logging.shutdown()
        os._exit(70)
