"""What an operator sees and does from the playground's operations panel: each board's
dead letters and their redrive, each consumer group's lag, and (with `make run`) the
sandbox boards' fault switches.

Dead letters are redriven with `consumers.redrive`, the logic `jobpost dlq redrive` uses,
so this process needs the boards' settings (`JOBPOST_CONSUMER_LINKEDIN__*`, ...) as the
CLI does. A letter is `resolved` once its version, or a newer one, was delivered.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import httpx
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from consumers.config import ConsumerSettings
from consumers.redrive import DeadLetter, dead_letters, make_board, redrive_one
from producer_api.config import ApiSettings
from producer_api.read.views import DeliveriesView
from runtime.outbox import deliver_all
from schemas.model import Destination
from schemas.topics import BOARDS, Topics

_LISTED = 500  # newest letters a list shows
_COUNTED = 1000  # a lag up to this many offsets is counted record by record


class SandboxMissing(Exception):
    """No job-board sandbox runs with this API."""


class Operations:
    def __init__(self, settings: ApiSettings, deliveries: DeliveriesView) -> None:
        self.settings = settings
        self.deliveries = deliveries
        self.topics = Topics(settings.kafka.topic_prefix)
        self._producer: Producer | None = None
        self._lock = asyncio.Lock()  # one redrive at a time

    def delivered_version(self, board: Destination, posting_id: str) -> int:
        state = self.deliveries.get(posting_id).get(board)
        return -1 if state is None or state.delivered_version is None else state.delivered_version

    async def dead_letters(self, board: Destination) -> list[dict[str, Any]]:
        """The board's letters, newest first, one per posting version (the newest letter)."""
        letters = await asyncio.to_thread(self._letters, board)
        return [self._present(board, letter) for letter in letters[:_LISTED]]

    async def redrive(
        self, board: Destination, partition: int | None, offset: int | None
    ) -> list[dict[str, Any]]:
        """One letter (partition and offset) or every unresolved one, oldest first."""
        settings = self._consumer_settings(board)
        async with self._lock:
            letters = [
                letter
                for letter in reversed(await asyncio.to_thread(self._letters, board))
                if (partition is None or (letter.partition, letter.offset) == (partition, offset))
                and not self._resolved(board, letter)
            ]
            redone: dict[str, int] = {}
            results = []
            connector = aiohttp.TCPConnector(ssl=settings.board_tls())
            async with aiohttp.ClientSession(connector=connector) as client:
                adapter = make_board(settings, client)
                for letter in letters:

                    def delivered(posting_id: str) -> int:
                        return max(redone.get(posting_id, -1), self.delivered_version(board, posting_id))

                    redriven = await redrive_one(adapter, letter.message, delivered, settings)
                    if not await asyncio.to_thread(
                        deliver_all, self._producer_or_new(), redriven.outgoing, lambda: False
                    ):
                        raise RuntimeError("Kafka did not acknowledge the redrive's writes")
                    if redriven.outcome == "delivered" and redriven.update is not None:
                        redone[redriven.update.posting_id] = redriven.update.version
                    update = redriven.update
                    results.append({
                        "posting_id": None if update is None else update.posting_id,
                        "version": None if update is None else update.version,
                        "outcome": redriven.outcome,
                        "detail": redriven.detail,
                    })  # fmt: skip
            return results

    async def lag(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._lag)

    async def boards(self) -> dict[str, Any]:
        if not self.settings.sandbox_url:
            return {"available": False, "boards": {}}
        async with httpx.AsyncClient(base_url=self.settings.sandbox_url, timeout=5) as client:
            found = {}
            for board in BOARDS:
                response = await client.get(f"/_sandbox/{board.value}/faults")
                response.raise_for_status()
                found[board.value] = response.json()
        return {"available": True, "boards": found}

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

    def _consumer_settings(self, board: Destination) -> ConsumerSettings:
        return ConsumerSettings(destination=board, kafka=self.settings.kafka)

    def _letters(self, board: Destination) -> list[DeadLetter]:
        newest: dict[tuple[str, int] | tuple[int, int], DeadLetter] = {}
        for letter in dead_letters(self._consumer_settings(board)):
            update = letter.update
            newest[
                (letter.partition, letter.offset) if update is None else (update.posting_id, update.version)
            ] = letter
        return sorted(newest.values(), key=lambda letter: (letter.at or 0, letter.offset), reverse=True)

    def _resolved(self, board: Destination, letter: DeadLetter) -> bool:
        update = letter.update
        return update is not None and self.delivered_version(board, update.posting_id) >= update.version

    def _present(self, board: Destination, letter: DeadLetter) -> dict[str, Any]:
        update = letter.update
        return {
            "partition": letter.partition,
            "offset": letter.offset,
            "posting_id": None if update is None else update.posting_id,
            "version": None if update is None else update.version,
            "op": None if update is None else update.op.value,
            "error": letter.error,
            "attempts": letter.attempts,
            "at": letter.at,
            "resolved": self._resolved(board, letter),
        }

    def _producer_or_new(self) -> Producer:
        if self._producer is None:
            self._producer = Producer(self.settings.kafka.producer_config())
        return self._producer

    def _lag(self) -> list[dict[str, Any]]:
        kafka = self.settings.kafka
        partitions = [TopicPartition(self.topics.postings, p) for p in range(kafka.partitions)]
        groups = self.settings.delivery_groups()
        admin = AdminClient(kafka.client_config())
        probe = Consumer(
            kafka.consumer_config(f"{kafka.topic_prefix}-lag-probe", **{"enable.partition.eof": True})
        )
        try:
            ends = {tp.partition: probe.get_watermark_offsets(tp, timeout=5) for tp in partitions}
            found = []
            for destination, group in groups.items():
                request = [ConsumerGroupTopicPartitions(group, partitions)]
                committed = admin.list_consumer_group_offsets(request)[group].result(10).topic_partitions
                behind = {
                    tp.partition: tp.offset if tp.offset >= 0 else ends[tp.partition][0]
                    for tp in committed
                    if (tp.offset if tp.offset >= 0 else ends[tp.partition][0]) < ends[tp.partition][1]
                }
                lag = sum(_records_after(probe, self.topics.postings, behind, ends).values())
                found.append({"group": group, "destination": destination.value, "lag": lag})
            return found
        finally:
            probe.close()


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
