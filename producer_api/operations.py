"""What an operator sees and does from the playground's operations panel: each board's
dead letters and their redrive, each consumer group's lag, each board's budgets, their use
and its circuit as its consumer members publish them (`producer_api.read.board_panel`), and
(with `make run`) the sandbox boards' fault switches.

A redrive is a request (`runtime.redrive`), as `jobpost dlq redrive` writes it: the board's
consumer handles it in the posting's lane and publishes its outcome as delivery events
(the posting's timeline). This process never calls a board and holds no board credentials.
A letter is `resolved` once its version, or a newer one, was delivered (as this replica's
view of `jobpost.deliveries` knows it: a view that is behind may offer a resolved letter,
whose redrive the lane then skips), or once its posting was deleted by a later version (a
deleted posting's versions are never sent again: its delete closes it at the board).

Nothing here reads a whole topic per request or makes a client per call, except a redrive
(an operator's action, which needs the letters' records): the lists come from each board's
index of its letters (`producer_api.read.dead_letter_index`), presented at most once a second per
board however many tabs ask, and the lag from one admin client and one probe consumer for
the process's life, likewise at most once a second.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import httpx
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from producer_api.config import ApiSettings
from producer_api.read.board_panel import BoardPanel, board_panels
from producer_api.read.board_status_view import BoardStatusView
from producer_api.read.dead_letter_index import DeadLettersView, IndexedLetter
from producer_api.read.views import DeliveriesView, PostingsView
from runtime.dead_letters import DeadLetter, newest_per_version, read_dead_letters
from runtime.kafka_clients import KafkaClients
from runtime.outbox import deliver_all
from runtime.redrive import requests_for
from schemas.model import Destination
from schemas.topics import BOARDS, Component, ReaderGroup, Topics

T = TypeVar("T")
_LISTED = 500  # newest letters a list shows
_COUNTED = 1000  # a lag up to this many offsets is counted record by record


@dataclasses.dataclass(frozen=True)
class ListedLetter(IndexedLetter):
    """A dead letter as the operations panel lists it: where it lies, what it holds and
    whether it is resolved (its version, or a newer one, delivered since; or a later
    version deleted the posting)."""

    resolved: bool = False


@dataclasses.dataclass(frozen=True)
class RedriveWritten:
    """A redrive request written (Kafka acknowledged it)."""

    request_id: str
    posting_id: str
    version: int
    partition: int  # where its letter lies in the board's dead-letter topic
    offset: int


@dataclasses.dataclass(frozen=True)
class GroupLag:
    group: str
    destination: Destination
    lag: int  # records of jobpost.postings the group has not committed


@dataclasses.dataclass(frozen=True)
class SandboxBoards:
    available: bool  # a job-board sandbox runs with this API
    boards: dict[str, dict[str, Any]]  # each sandbox board's fault settings
    status: dict[str, BoardPanel] = dataclasses.field(default_factory=dict)  # what the consumers hold


class SandboxMissing(Exception):
    """No job-board sandbox runs with this API."""


class Recent(Generic[T]):
    """An answer computed at most once per `max_age_s`: callers within that time share it,
    and callers that arrive while it is being computed wait for that computation."""

    def __init__(self, max_age_s: float = 1.0) -> None:
        self.max_age_s = max_age_s
        self._value: tuple[float, T] | None = None
        self._lock = asyncio.Lock()

    async def get(self, compute: Callable[[], Awaitable[T]]) -> T:
        async with self._lock:
            if self._value is None or time.monotonic() - self._value[0] >= self.max_age_s:
                self._value = (time.monotonic(), await compute())
            return self._value[1]


class Operations:
    def __init__(
        self,
        settings: ApiSettings,
        deliveries: DeliveriesView,
        postings: PostingsView | None = None,
        letters: dict[Destination, DeadLettersView] | None = None,
        board_status: BoardStatusView | None = None,
    ) -> None:
        self.settings = settings
        self.deliveries = deliveries
        self.postings = postings
        self.letters = letters or {}
        self.board_status = board_status
        self.topics = Topics(settings.kafka.topic_prefix)
        self._producer: Producer | None = None
        self._lock = asyncio.Lock()  # one redrive at a time
        self._listed = {board: Recent[list[ListedLetter]]() for board in BOARDS}
        self._lags = Recent[list[GroupLag]]()
        self._lag_clients: tuple[AdminClient, Consumer] | None = None
        self._lag_lock = threading.Lock()  # the probe consumer's assignment is one at a time

    def delivered_version(self, board: Destination, posting_id: str) -> int:
        state = self.deliveries.get(posting_id).get(board)
        return -1 if state is None or state.delivered_version is None else state.delivered_version

    async def dead_letters(self, board: Destination) -> list[ListedLetter]:
        """The board's letters, newest first, one per posting version (the newest letter),
        from its index."""
        return await self._listed[board].get(lambda: asyncio.to_thread(self._from_index, board))

    def _from_index(self, board: Destination) -> list[ListedLetter]:
        index = self.letters.get(board)
        letters = [] if index is None else index.newest()[:_LISTED]
        return [
            ListedLetter(
                **dataclasses.asdict(letter),
                resolved=letter.posting_id is not None
                and letter.version is not None
                and self._settled(board, letter.posting_id, letter.version),
            )
            for letter in letters
        ]

    async def redrive(
        self, board: Destination, partition: int | None, offset: int | None, requested_by: str
    ) -> list[RedriveWritten]:
        """Ask the board's consumer to attempt one letter (partition and offset) or every
        unresolved one once more, oldest first: the requests written, once Kafka took them."""
        async with self._lock:
            letters = [
                letter
                for letter in reversed(await asyncio.to_thread(self._letters, board))
                if (partition is None or (letter.partition, letter.offset) == (partition, offset))
                and not self._resolved(board, letter)
            ]
            requested = requests_for(letters, requested_by, self.settings.kafka.partitions)
            records = [r.record(self.topics, board) for r in requested]
            if not await asyncio.to_thread(deliver_all, self._producer_or_new(), records, lambda: False):
                raise RuntimeError("Kafka did not acknowledge the redrive requests")
        return [
            RedriveWritten(
                r.request.request_id,
                r.request.posting_id,
                r.request.version,
                r.request.letter_partition,
                r.request.letter_offset,
            )
            for r in requested
        ]

    async def lag(self) -> list[GroupLag]:
        return await self._lags.get(lambda: asyncio.to_thread(self._lag))

    async def boards(self) -> SandboxBoards:
        """The sandbox boards' fault switches (with `make run`) and what each board's
        consumer members hold of it (their statuses on jobpost.board-status)."""
        statuses = [] if self.board_status is None else await asyncio.to_thread(self.board_status.all)
        status = board_panels([b.value for b in BOARDS], statuses, time.time_ns() // 1_000_000)
        if not self.settings.sandbox_url:
            return SandboxBoards(available=False, boards={}, status=status)
        async with httpx.AsyncClient(base_url=self.settings.sandbox_url, timeout=5) as client:
            found = {}
            for board in BOARDS:
                response = await client.get(f"/_sandbox/{board.value}/faults")
                response.raise_for_status()
                found[board.value] = response.json()
        return SandboxBoards(available=True, boards=found, status=status)

    async def set_faults(self, board: Destination, faults: dict[str, Any]) -> dict[str, Any]:
        if not self.settings.sandbox_url:
            raise SandboxMissing("no job-board sandbox runs with this API (make run starts one)")
        async with httpx.AsyncClient(base_url=self.settings.sandbox_url, timeout=5) as client:
            response = await client.put(f"/_sandbox/{board.value}/faults", json=faults)
            response.raise_for_status()
            answer: dict[str, Any] = response.json()
            return answer

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
        with self._lag_lock:
            if self._lag_clients is not None:
                self._lag_clients[1].close()
                self._lag_clients = None

    def _letters(self, board: Destination) -> list[DeadLetter]:
        topic = self.topics.dlq(Component(board.value))
        return newest_per_version(read_dead_letters(self.settings.kafka, topic))

    def _resolved(self, board: Destination, letter: DeadLetter) -> bool:
        update = letter.update
        return update is not None and self._settled(board, update.posting_id, update.version)

    def _settled(self, board: Destination, posting_id: str, version: int) -> bool:
        """Nothing left to redrive: the version or a newer one was delivered, or a later
        version deleted the posting (a DELETE letter itself stays redrivable)."""
        if self.delivered_version(board, posting_id) >= version:
            return True
        deleted_at = None if self.postings is None else self.postings.deleted_at(posting_id)
        return deleted_at is not None and deleted_at > version

    def _producer_or_new(self) -> Producer:
        if self._producer is None:
            self._producer = KafkaClients(self.settings.kafka).producer()
        return self._producer

    def _clients(self) -> tuple[AdminClient, Consumer]:
        """The admin client and probe consumer of the lag panel, made once (under _lag_lock)."""
        if self._lag_clients is None:
            clients = KafkaClients(self.settings.kafka)
            probe = clients.reader(self.topics.reader_group(ReaderGroup.LAG_PROBE), ends=True)
            self._lag_clients = (clients.admin(), probe)
        return self._lag_clients

    def _lag(self) -> list[GroupLag]:
        kafka = self.settings.kafka
        partitions = [TopicPartition(self.topics.postings, p) for p in range(kafka.partitions)]
        groups = self.settings.delivery_groups()
        with self._lag_lock:
            admin, probe = self._clients()
            ends = {tp.partition: probe.get_watermark_offsets(tp, timeout=5) for tp in partitions}
            found: list[GroupLag] = []
            for destination, group in groups.items():
                request = [ConsumerGroupTopicPartitions(group, partitions)]
                committed = admin.list_consumer_group_offsets(request)[group].result(10).topic_partitions
                behind = {
                    tp.partition: tp.offset if tp.offset >= 0 else ends[tp.partition][0]
                    for tp in committed
                    if (tp.offset if tp.offset >= 0 else ends[tp.partition][0]) < ends[tp.partition][1]
                }
                lag = sum(_records_after(probe, self.topics.postings, behind, ends).values())
                found.append(GroupLag(group, destination, lag))
            return found


def _records_after(
    probe: Consumer, topic: str, starts: dict[int, int], ends: dict[int, tuple[int, int]]
) -> dict[int, int]:
    """Records from each start to its partition's end. The end offset also counts the
    transaction markers (every write is a transaction), so a short distance is read and
    counted; a long one is taken as it is."""
    counts = {p: ends[p][1] - start for p, start in starts.items()}
    short = {p: start for p, start in starts.items() if counts[p] <= _COUNTED}
    if not short:
        return counts
    probe.assign([TopicPartition(topic, p, start) for p, start in short.items()])
    for p in short:
        counts[p] = 0
    left, deadline = set(short), time.monotonic() + 5
    while left and time.monotonic() < deadline:
        message = probe.poll(0.2)
        if message is None:
            continue
        partition, error = message.partition(), message.error()
        if partition is None:
            continue
        if error is None:
            counts[partition] += 1
        elif error.code() == KafkaError._PARTITION_EOF:
            left.discard(partition)
    probe.unassign()
    return counts
