"""The board consumer, put together: records from Kafka (`runtime.consume_loop`) go through
the intake (`consumers.intake`) to their postings' lanes (`consumers.lanes`), each version to
the board through the destination every lane shares (`consumers.destination`), what it came
to written down (`consumers.outcomes`) in Kafka (`consumers.delivery_log`); the loop commits
each partition's finished prefix. The job watch (`consumers.job_watch`) follows the jobs the
board holds open (their status, expiry, renewal) and tells the lanes what it learns.

The runner starts and stops those parts, and every commit interval publishes how old the
oldest unfinished record and the oldest unresolved dead letter are, and the watchdog; the
member's status of its board (`consumers.status_publisher`) goes to jobpost.board-status.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor

from prometheus_client import Gauge

from consumers.attempts import Attempts
from consumers.clock import Clock, SystemClock
from consumers.config import ConsumerSettings
from consumers.delivery_log import KafkaDeliveryLog
from consumers.delivery_states import StoredStates
from consumers.destination.metrics import STRANDED
from consumers.destination.shared import SharedDestination
from consumers.intake import BoardIntake
from consumers.job_watch import JobWatch
from consumers.lanes import LaneScheduler
from consumers.letter_check import LetterReader
from consumers.outcomes import Outcomes
from consumers.retry import RetryPolicy
from consumers.status_publisher import StatusPublisher
from runtime.consume_loop import ConsumeLoop, Source
from runtime.kafka_clients import KafkaClients
from runtime.stores import Stores
from schemas.topics import ReaderGroup, Topics

log = logging.getLogger(__name__)

OLDEST_UNCONSUMED = Gauge(
    "jobpost_consumer_oldest_unconsumed_age_seconds",
    "Age of the oldest record this member read and has not finished (0: none)",
    ["group"],
)
OLDEST_LETTER = Gauge(
    "jobpost_dead_letter_oldest_unresolved_age_seconds",
    "Age of the oldest dead letter no delivered version resolved yet, on this member's partitions (0: none)",
    ["destination"],
)


class DeliveryRunner:
    def __init__(
        self,
        settings: ConsumerSettings,
        destination: SharedDestination,
        policy: RetryPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.destination = destination
        self.name = settings.destination
        self.topics = Topics(settings.kafka.topic_prefix)
        self.clients = KafkaClients(settings.kafka)
        self.producer = self.clients.producer()
        self.states = StoredStates(
            Stores(settings.state, settings.kafka, self.name.value, self.topics.deliveries),
            self.name,
            settings.kafka.partitions,
        )
        clock = clock or SystemClock()
        terms = settings.job_terms()
        self.lanes = LaneScheduler(
            self.name,
            Outcomes(
                self.name,
                KafkaDeliveryLog(self.producer, self.topics, settings.component, self.states),
                clock,
            ),
            Attempts(self.name, destination, clock),
            self.states,
            policy or RetryPolicy(settings.retry),
            clock=clock,
            conflate=settings.conflates,
            terms=terms,
        )
        self.jobs = JobWatch(destination, self.lanes, self.states, terms, clock)
        self.status = StatusPublisher(
            self.producer, self.topics, destination, clock, settings.status_interval_s
        )
        self.states.watch = self.jobs
        self.restorer = ThreadPoolExecutor(1, thread_name_prefix="restore")
        self.loop: ConsumeLoop | None = None
        self._stop = asyncio.Event()
        OLDEST_LETTER.labels(self.name.value).set_function(self._oldest_letter_age)

    def stop(self) -> None:
        self._stop.set()
        if self.loop is not None:
            self.loop.stop()

    async def run(self) -> None:
        settings = self.settings
        reader = self.clients.reader(self.topics.reader_group(ReaderGroup.LETTERS))
        letters = LetterReader(reader, self.topics.dlq(settings.component))
        self.intake = BoardIntake(
            self.name,
            self.topics.postings,
            self.lanes,
            self.states,
            self.destination,
            self.restorer,
            letters,
            self.producer,
            self.topics,
        )
        self.loop = loop = self._consume_loop(self.intake)
        if self._stop.is_set():
            loop.stop()
        self.destination.start()
        watch = asyncio.create_task(self._watch(loop))
        jobs = asyncio.create_task(self.jobs.run())
        status = asyncio.create_task(self.status.run())
        try:
            await loop.run()
        finally:
            watch.cancel()
            jobs.cancel()
            status.cancel()
            self.status.leave()
            self.lanes.close()
            await self.destination.close()
            await asyncio.to_thread(self.restorer.submit(self.states.close).result)
            self.restorer.shutdown()
            await asyncio.to_thread(self.intake.shut)

    def _consume_loop(self, intake: BoardIntake) -> ConsumeLoop:
        settings, name = self.settings, self.name
        return ConsumeLoop(
            intake,
            self.producer,
            self.topics,
            member=self.clients.member(
                settings.group, session_timeout_ms=settings.session_timeout_ms, gathered=True
            ),
            main=Source(self.topics.postings, settings.component, dead_letters=settings.component),
            group=settings.group,
            followers=[
                (
                    self.clients.reader(f"{settings.group}-redrive", patient=True),  # rarely written
                    Source(self.topics.redrive(name), f"{name.value}-redrive", dead_letters=None),
                )
            ],
            commit_interval_s=settings.commit_interval_s,
            max_buffered=settings.max_buffered,
        )

    async def _watch(self, loop: ConsumeLoop) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.settings.commit_interval_s)
            oldest = loop.oldest_unfinished_ms()
            age = 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)
            OLDEST_UNCONSUMED.labels(self.settings.group).set(age)
            self._watchdog()
            if self._stop.is_set():
                return

    def _watchdog(self) -> None:
        """Postings waiting with no clock (`jobpost_delivery_stranded_postings`); never
        expected, so each time it is not 0 it is said in the log as well."""
        stranded = self.destination.stranded() + self.lanes.without_clock()
        STRANDED.labels(self.name.value).set(stranded)
        if stranded:
            log.error(
                "%s: %d postings wait with no clock (nothing will send them): a lost wake-up",
                self.name,
                stranded,
            )

    def _oldest_letter_age(self) -> float:
        oldest = self.states.oldest_unresolved_letter_at()
        return 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)
