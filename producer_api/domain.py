"""The posting aggregate and the sequencer's decision for one command. Pure: no Kafka here.

A `PartitionState` holds every posting of one partition of `jobpost.postings`. It is fed
the log (`apply`) to restore, and `decide` turns a command into the records to write and
the reply to send, updating itself as if those records were written.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["ACCEPTED", "NOT_FOUND", "GONE", "VERSION_MISMATCH", "ALREADY_EXISTS"]
RECENT_REQUESTS = 32  # request ids remembered per posting, for Idempotency-Key retries


@dataclass
class Result:
    """What a command ended as: the reply's content."""

    outcome: Outcome
    version: int | None = None
    deleted: bool = False
    posting: dict[str, str] | None = None
    last_update_time_millis: int | None = None


@dataclass
class PostingState:
    version: int
    deleted: bool
    posting: dict[str, str] | None
    last_update_time_millis: int | None
    recent: OrderedDict[str, Result] = field(default_factory=OrderedDict)

    def remember(self, request_id: str, result: Result) -> None:
        self.recent[request_id] = result
        self.recent.move_to_end(request_id)
        while len(self.recent) > RECENT_REQUESTS:
            self.recent.popitem(last=False)

    def as_result(self) -> Result:
        return Result("ACCEPTED", self.version, self.deleted, self.posting, self.last_update_time_millis)


@dataclass
class Decision:
    """Records for `jobpost.postings` (value None is a tombstone) and the reply."""

    updates: list[dict[str, Any] | None]
    result: Result


class PartitionState:
    def __init__(self) -> None:
        self.postings: dict[str, PostingState] = {}

    def apply(self, posting_id: str, update: dict[str, Any] | None) -> None:
        """Fold one record of the log into the state (None: a tombstone)."""
        current = self.postings.get(posting_id)
        if update is None:
            if current is None:
                # Compaction kept only the tombstone: deleted, version forgotten.
                self.postings[posting_id] = PostingState(-1, True, None, None)
            else:
                current.deleted = True
            return
        deleted = update["op"] == "DELETED"
        state = current or PostingState(update["version"], deleted, None, None)
        state.version = update["version"]
        state.deleted = deleted
        state.posting = update["posting"]
        state.last_update_time_millis = update["last_update_time_millis"]
        state.remember(update["request_id"], state.as_result())
        self.postings[posting_id] = state

    def decide(self, command: dict[str, Any], now_millis: int) -> Decision:
        posting_id = command["posting_id"]
        request_id = command["request_id"]
        state = self.postings.get(posting_id)
        if state is not None and request_id in state.recent:
            return Decision([], state.recent[request_id])  # a retry: same answer, nothing written

        action = command["action"]
        if action == "CREATE":
            if state is not None:
                return Decision([], _refusal("GONE" if state.deleted else "ALREADY_EXISTS", state))
            return self._accept(command, "CREATED", 0, command["posting"], now_millis)
        if state is None:
            return Decision([], Result("NOT_FOUND"))
        if state.deleted:
            return Decision([], _refusal("GONE", state))
        expected = command.get("expected_version")
        if expected is not None and expected != state.version:
            return Decision([], _refusal("VERSION_MISMATCH", state))
        if action == "REPLACE":
            return self._accept(command, "UPDATED", state.version + 1, command["posting"], now_millis)
        decision = self._accept(command, "DELETED", state.version + 1, state.posting, now_millis)
        decision.updates.append(None)  # the tombstone, so compaction can forget the posting
        return decision

    def _accept(
        self, command: dict[str, Any], op: str, version: int, posting: Any, now_millis: int
    ) -> Decision:
        posting_id = command["posting_id"]
        update = {
            "posting_id": posting_id,
            "version": version,
            "op": op,
            "idempotency_key": f"{posting_id}:{version}",
            "request_id": command["request_id"],
            "posting": posting,
            "last_update_time_millis": now_millis,
            "accepted_at": command["received_at"],
        }
        self.apply(posting_id, update)
        return Decision([update], self.postings[posting_id].as_result())


def _refusal(outcome: Outcome, state: PostingState) -> Result:
    version = state.version if state.version >= 0 else None
    return Result(outcome, version, state.deleted, None, state.last_update_time_millis)
