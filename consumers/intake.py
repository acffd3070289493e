"""The board consumer's work in the consume loop (`runtime.consume_loop.Work`): a partition
opens once its delivery states are restored, and each record of `jobpost.postings` or of the
board's redrive requests (`jobpost.<board>.redrive`, co-partitioned) goes to its posting's
lane, which says when it is finished. A redrive request joins it only once the dead letter it
names is read, with the version it holds (`consumers.letter_check`).

Retry progress lives in `jobpost.deliveries` and, as a cache of it, in a local store per
partition (`consumers.delivery_states`), restored on a worker thread when a partition is assigned,
before its records are read, so a restarted or rebalanced consumer resumes the same attempt
count and deadline, reading only what changed since. The destination's rate budget is the
group's, shared out by the partitions each member owns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from confluent_kafka import KafkaException, Message, Producer

from consumers.delivery_states import StoredStates
from consumers.destination.shared import SharedDestination
from consumers.items import Item, posting_item, request_item
from consumers.lanes import LaneScheduler
from consumers.letter_check import LetterReader, Refused, refuse, the_version
from schemas.model import Destination
from schemas.topics import Topics

log = logging.getLogger(__name__)


class BoardIntake:
    def __init__(
        self,
        name: Destination,
        postings_topic: str,
        lanes: LaneScheduler,
        states: StoredStates,
        destination: SharedDestination,
        restorer: ThreadPoolExecutor,
        letters: LetterReader,
        producer: Producer,
        topics: Topics,
    ) -> None:
        self.name = name
        self.postings_topic = postings_topic
        self.lanes = lanes
        self.states = states
        self.destination = destination
        self.restorer = restorer  # one thread: one store restored at a time
        self.letters = letters
        self.letter_thread = ThreadPoolExecutor(1, thread_name_prefix="letters")
        self.producer = producer
        self.topics = topics
        self.owned: set[int] = set()

    async def open(self, partition: int) -> None:
        """Restore the partition's delivery states on the worker thread; they serve the
        lanes from then on."""
        self._share(self.owned | {partition})
        started = time.monotonic()
        loop = asyncio.get_running_loop()
        store, letters, jobs = await loop.run_in_executor(self.restorer, self.states.restore, partition)
        self.states.opened(partition, store, letters, jobs)  # no await between: a revocation cancels before
        elapsed = time.monotonic() - started
        log.info("%s partition %d restored in %.1f s: reading its records", self.name, partition, elapsed)

    def take(self, message: Message) -> Awaitable[None]:
        if message.topic() == self.postings_topic:
            return self.lanes.add(posting_item(message))
        return self._checked(request_item(message))

    async def _checked(self, item: Item) -> None:
        """A redrive request into its lane once its letter is found to match; refused
        (said and audited, never attempted) otherwise."""
        request = item.request
        assert request is not None
        loop = asyncio.get_running_loop()
        try:
            letter = await loop.run_in_executor(
                self.letter_thread, self.letters.at, request.letter_partition, request.letter_offset
            )
            update = the_version(request, letter)
        except (TimeoutError, KafkaException) as exc:
            why = f"its dead letter could not be read ({exc}); ask again"
        except Refused as refused:
            why = str(refused)
        else:
            await self.lanes.add(replace(item, update=update))
            return
        refuse(self.producer, self.topics, self.name, request, item.partition, why)

    def shut(self) -> None:
        """Stop reading letters (after the consume loop ended)."""
        self.letter_thread.shutdown(wait=True)
        self.letters.close()

    def close(self, partitions: set[int]) -> None:
        self.lanes.drop_partitions(partitions)
        self.states.give_up(partitions)
        self.restorer.submit(self.states.close, partitions)  # after any restore of them still running
        self._share(self.owned - partitions)

    def _share(self, owned: set[int]) -> None:
        self.owned = owned
        self.destination.set_share(len(owned), self.states.partitions)
