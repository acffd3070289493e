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
When no session has come up for `give_up_after_s`, `run()` raises SequencerFailed (what
happens then: the last paragraph).

Each session runs on a thread of its own, which the member watches. A session whose
transaction has been open for `stuck_after_s` is blocked in a Kafka client call that
ignores its own timeout (librdkafka's `send_offsets_to_transaction` waits for ever on a
coordinator that left the cluster, confluentinc/librdkafka#5456 and #5511), and a thread
blocked in C cannot be stopped: the member abandons it and starts the next session at
once. That session's producer, under the same transactional id, fences the stuck one and
aborts its transaction when it initialises, and its consumer, under the same static
member name, takes the stuck one's place in the group, so whatever the stuck thread does
when its call returns is refused by Kafka; it ends then. A dynamic member (no instance id)
also has the stuck session's consumer closed, off its thread: its next session is a new
member of the group, whose rebalance would otherwise wait for the stuck one to give its
partitions up. When more than `_MAX_STUCK` abandoned sessions are still blocked, `run()`
raises SequencerFailed, and the stuck session's consumer is closed too, so its partitions
go to the other members.

What happens then depends on where the member runs (`run_in_process`, `run_or_exit`): a
member embedded in the API never ends its process (its HTTP front, read views and
connections serve on; readiness says writes are not ready); it pauses for a random
while and starts again. `jobpost sequencer`, which serves nothing else, exits for its
supervisor to restart it, after a random delay too, so replicas never end together.
"""

from __future__ import annotations

import functools
import logging
import os
import random
import sys
import sysconfig
import threading
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

from confluent_kafka import KafkaException
from prometheus_client import Counter, Gauge

from sequencer.clock import BrokerClock
from sequencer.config import SequencerSettings
from sequencer.session import Session

log = logging.getLogger(__name__)

# A session that failed because a broker died is usually replaced at once: the new one
# finds the moved leaders and coordinators (static membership keeps the partitions).
FIRST_BACKOFF_S = 0.1
_WATCH_EVERY_S = 0.2
_MAX_STUCK = 3  # abandoned sessions still blocked in the Kafka client, at most
SESSIONS = Counter("jobpost_sequencer_sessions_total", "Sequencer sessions started (restarts after failures)")
ABANDONED = Counter(
    "jobpost_sequencer_sessions_abandoned_total",
    "Sequencer sessions left blocked in a Kafka client call and replaced by a new one",
)
BLOCKED = Gauge(
    "jobpost_sequencer_sessions_blocked",
    "Abandoned sequencer sessions whose Kafka client call has not returned yet",
)
FAILURES = Counter(
    "jobpost_sequencer_failures_total",
    "Times the sequencer member gave up (no session for too long, too many blocked) and paused",
)
# After SequencerFailed: an embedded member pauses this long (uniformly at random, so
# replicas that failed for one cause start again apart) before it starts over; a member in
# a process of its own waits up to the upper bound before it exits. Longer than the group's
# session timeout, so a member that handed its partitions over does not take them back at
# once only to fail again.
PAUSE_AFTER_FAILURE_S = (12.0, 24.0)


class SequencerFailed(RuntimeError):
    """No session could be brought up for too long, or too many are stuck: the process
    should exit."""


class SessionStuck(RuntimeError):
    """The session's transaction stayed open too long: it was abandoned."""


@dataclass(frozen=True)
class SequencerStatus:
    """What the member serves right now, as one snapshot (readiness reads it from another
    thread; the session replaces it whole, never changes it)."""

    session_up: bool = False  # a session is consuming
    assigned: frozenset[int] = frozenset()  # restored and served by this member
    restoring: frozenset[int] = frozenset()  # assigned, state still being read from the log
    failed: str | None = None  # why the member gave up, while it pauses before it starts again


class Sequencer:
    def __init__(
        self,
        settings: SequencerSettings,
        session: type[Session] = Session,
        *,
        watch_every_s: float = _WATCH_EVERY_S,
        first_backoff_s: float = FIRST_BACKOFF_S,
    ) -> None:
        self.settings = settings
        self._session_type = session
        self._watch_every_s = watch_every_s  # how often the watch looks at a session's transaction
        self._first_backoff_s = first_backoff_s  # before the first new session after a failure
        self._stop = threading.Event()
        self._status = SequencerStatus()
        self._status_lock = threading.Lock()
        self._current = 0  # the number of the session whose news the status shows
        self._stuck: list[threading.Thread] = []  # abandoned sessions' threads
        self.clock = BrokerClock()

    @property
    def status(self) -> SequencerStatus:
        return self._status

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()

    def pause(self, why: str, seconds: float) -> None:
        """After a failure: say why in the status, wait (stop() ends the wait), clear it."""
        with self._status_lock:
            self._current += 1  # no session's news counts meanwhile
            self._status = SequencerStatus(failed=why)
        self._stop.wait(seconds)
        with self._status_lock:
            self._status = SequencerStatus()

    def run(self) -> None:
        """Run sessions until stop(); a failed session is replaced after a short backoff."""
        backoff = self._first_backoff_s
        last_up = time.monotonic()
        while not self._stop.is_set():
            SESSIONS.inc()
            with self._status_lock:
                self._current += 1
            report = functools.partial(self._report_from, self._current)
            session: Session | None = None
            try:
                session = self._session_type(self.settings, self._stop, report, self.clock)
                self._watch(session)
                backoff = self._first_backoff_s
            except SequencerFailed:
                raise
            except Exception as exc:  # any failure ends the session, never the member
                expected = isinstance(exc, KafkaException | TimeoutError | SessionStuck)
                log.warning(
                    "sequencer session ended: %r; a new one in %.1f s", exc, backoff, exc_info=not expected
                )
            finally:
                if session is not None and session.came_up:
                    last_up = time.monotonic()
                self._stuck = [t for t in self._stuck if t.is_alive()]  # those whose call returned end
                BLOCKED.set(len(self._stuck))
                self._report_from(
                    self._current, session_up=False, assigned=frozenset(), restoring=frozenset()
                )
            if time.monotonic() - last_up > self.settings.give_up_after_s:
                raise SequencerFailed(
                    f"no sequencer session came up for {self.settings.give_up_after_s:.0f} s"
                )
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 2.0)  # a broker's failover takes seconds: try again soon

    def _watch(self, session: Session) -> None:
        """Run the session on a thread of its own until it ends, and raise what it raised;
        once its transaction has been open for `stuck_after_s`, abandon it."""
        failure: list[BaseException] = []

        def run() -> None:
            try:
                session.run()
            except BaseException as exc:  # noqa: BLE001 - handed to the member's thread, which raises it
                failure.append(exc)

        thread = threading.Thread(target=run, name="sequencer-session", daemon=True)
        thread.start()
        while thread.is_alive():
            thread.join(self._watch_every_s)
            stuck = session.transaction.open_for()
            if stuck > self.settings.stuck_after_s and thread.is_alive():
                self._abandon(session, thread, stuck)
        if failure:
            raise failure[0]

    def _abandon(self, session: Session, thread: threading.Thread, stuck: float) -> None:
        where = _blocked_in(thread)
        with self._status_lock:
            self._current += 1  # nothing the abandoned session reports counts any more
        session.abandon()
        ABANDONED.inc()
        self._stuck = [t for t in self._stuck if t.is_alive()] + [thread]
        too_many = len(self._stuck) > _MAX_STUCK
        if too_many or self.settings.instance_id is None:
            # No successor under the same name takes its place in the group at once (a
            # dynamic member's is a new member, whose rebalance would wait for this one
            # to let its partitions go; after too many, none follows for a while): its
            # consumer leaves now, off this thread, so the partitions move.
            session.release()
        if too_many:
            raise SequencerFailed(
                f"{len(self._stuck)} sequencer sessions are blocked in Kafka client calls, the last "
                f"for {stuck:.1f} s in {where}"
            )
        raise SessionStuck(
            f"its transaction has been open for {stuck:.1f} s, blocked in {where}: abandoned, "
            "the next session fences it"
        )

    def _report_from(self, number: int, **changes: object) -> None:
        """Session `number`'s news (a new snapshot with these fields changed), unless a newer
        session has begun since."""
        with self._status_lock:
            if number == self._current:
                self._status = replace(self._status, **changes)  # type: ignore[arg-type]


def _blocked_in(thread: threading.Thread) -> str:
    """Where a thread is: file, line and code of its innermost frame outside the standard
    library (a call into the Kafka client has no frame of its own)."""
    frame = sys._current_frames().get(thread.ident or -1)
    stdlib = sysconfig.get_paths()["stdlib"]
    frames = [f for f in traceback.extract_stack(frame) if not f.filename.startswith(stdlib)] if frame else []
    if not frames:
        return "an unknown place"
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno} ({frames[-1].line})"


def run_in_process(sequencer: Sequencer) -> None:
    """Run a member embedded in another process (the API) until stop(), never ending that
    process: when the member gives up (SequencerFailed, or a bug), it says why in its status
    (readiness: writes not ready), pauses for a random while and starts again. The process's
    other work (the HTTP front, its read views) goes on meanwhile."""
    while not sequencer.stopping:
        try:
            sequencer.run()
        except BaseException as exc:
            FAILURES.inc()
            pause = random.uniform(*PAUSE_AFTER_FAILURE_S)
            log.error(
                "the sequencer member gave up: %s; it starts again in %.0f s (this process serves on)",
                exc,
                pause,
                exc_info=not isinstance(exc, SequencerFailed),
            )
            sequencer.pause(str(exc), pause)


def run_or_exit(sequencer: Sequencer) -> None:
    """Run a member that is its process's only work (`jobpost sequencer`); should it give
    up, exit (status 70) so its supervisor restarts it, after a random delay of up to
    PAUSE_AFTER_FAILURE_S, so members that gave up for one cause do not all restart at
    once. Not an orderly exit: a session stuck in the Kafka client would hold it up."""
    try:
        sequencer.run()
    except BaseException as exc:
        delay = random.uniform(0, PAUSE_AFTER_FAILURE_S[1])
        log.critical(
            "the sequencer stopped; exiting in %.0f s so the supervisor restarts us", delay, exc_info=True
        )
        sequencer.pause(str(exc), delay)
        logging.shutdown()
        os._exit(70)
