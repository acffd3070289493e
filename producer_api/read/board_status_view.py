"""The API's view of `jobpost.board-status` (one partition, compacted, read whole): every
board consumer member's latest status (`schemas.board_status.BoardStatus`), keyed
`{board}/{member}`; a member that stopped (its tombstone) is gone. `GET /ops/boards`
merges them per board (`producer_api.read.board_panel`)."""

from __future__ import annotations

from confluent_kafka import Message

from producer_api.read.log_view import LogView
from runtime import records
from runtime.kafka import KafkaSettings
from runtime.stores import Put, StateSettings
from schemas import codec
from schemas.board_status import BoardStatus
from schemas.topics import Topics


class BoardStatusView(LogView):
    reader = "board-status-view"

    def __init__(self, kafka: KafkaSettings, state: StateSettings | None = None) -> None:
        super().__init__(kafka, Topics(kafka.topic_prefix).board_status, state)
        self._partition_count = 1  # the topic has one partition (schemas.topics)

    def all(self) -> list[BoardStatus]:
        with self._lock:
            raw = [value for store in list(self.stores.open.values()) for _, value in store.items()]
        return [codec.board_statuses().decode(value) for value in raw]

    def apply(self, message: Message) -> list[Put]:
        key, status = records.board_status(message)
        return [(key.encode(), None if status is None else message.value())]
