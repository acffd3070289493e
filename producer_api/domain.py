"""The posting aggregate and the sequencer's decision for one command. Pure: no Kafka here.

A `PartitionState` holds every posting of one partition of `jobpost.postings`. It is fed
the log (`apply`) to restore, and `decide` turns a command into the records to write and
the reply to send, updating itself as if those records were written.

Idempotency keys follow the IETF `Idempotency-Key` draft: a key belongs to one posting;
within the window (24 hours) a repeat of the same request (same method, same body) is
answered with the original result and writes nothing, and the same key with another
request is refused (`KEY_REUSED`). The state keeps, per key, only what a replay needs:
the method, a fingerprint of the request and the result — never posting text.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["ACCEPTED", "NOT_FOUND", "GONE", "VERSION_MISMATCH", "ALREADY_EXISTS", "KEY_REUSED"]
IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000
_OP_OF = {"CREATE": "CREATED", "REPLACE": "UPDATED", "DELETE": "DELETED"}
_ACTION_OF = {op: action for action, op in _OP_OF.items()}


@dataclass(frozen=True)
class Result:
    """What a command ended as: the reply's content."""

    outcome: Outcome
    version: int | None = None
    deleted: bool = False
    last_update_time_millis: int | None = None


@dataclass(frozen=True)
class KeyUse:
    """One accepted request made with an Idempotency-Key: enough to recognise and replay it."""

    action: str
    fingerprint: str
    result: Result

    def matches(self, action: str, fingerprint: str) -> bool:
        # Records written before fingerprints existed carry none: the action must still match.
        return self.action == action and (not self.fingerprint or self.fingerprint == fingerprint)


@dataclass
class PostingState:
    version: int
    deleted: bool
    posting: dict[str, str] | None
    last_update_time_millis: int | None
    keys: dict[str, KeyUse] = field(default_factory=dict)

    def as_result(self) -> Result:
        return Result("ACCEPTED", self.version, self.deleted, self.last_update_time_millis)


@dataclass
class Decision:
    """Records for `jobpost.postings` (value None is a tombstone) and the reply."""

    updates: list[dict[str, Any] | None]
    result: Result


class PartitionState:
    def __init__(self, window_ms: int = IDEMPOTENCY_WINDOW_MS) -> None:
        self.postings: dict[str, PostingState] = {}
        self.window_ms = window_ms
        self._key_times: deque[tuple[int, str, str]] = deque()  # (accepted at, posting, key)

    def apply(self, posting_id: str, update: dict[str, Any] | None) -> None:
        """Fold one record of the log into the state (None: a tombstone)."""
        current = self.postings.get(posting_id)
        if update is None:
            if current is None:
                # Compaction kept only the tombstone: deleted, version forgotten.
                self.postings[posting_id] = PostingState(-1, True, None, None)
            else:
                current.deleted = True
                current.posting = None
            return
        deleted = update["op"] == "DELETED"
        state = current or PostingState(update["version"], deleted, None, None)
        state.version = update["version"]
        state.deleted = deleted
        state.posting = None if deleted else update["posting"]
        state.last_update_time_millis = update["last_update_time_millis"]
        self.postings[posting_id] = state
        use = KeyUse(_ACTION_OF[update["op"]], update.get("request_fingerprint", ""), state.as_result())
        state.keys[update["request_id"]] = use
        self._key_times.append((update["last_update_time_millis"], posting_id, update["request_id"]))

    def decide(self, command: dict[str, Any], now_millis: int) -> Decision:
        self.forget_keys_before(now_millis - self.window_ms)
        posting_id = command["posting_id"]
        action = command["action"]
        state = self.postings.get(posting_id)
        used = state.keys.get(command["request_id"]) if state is not None else None
        if used is not None:
            if used.matches(action, command.get("request_fingerprint", "")):
                return Decision([], used.result)  # a retry: the original answer, nothing written
            return Decision([], Result("KEY_REUSED"))

        if action == "CREATE":
            if state is not None:
                return Decision([], _refusal("GONE" if state.deleted else "ALREADY_EXISTS", state))
            return self._accept(command, 0, command["posting"], now_millis)
        if state is None:
            return Decision([], Result("NOT_FOUND"))
        if state.deleted:
            return Decision([], _refusal("GONE", state))
        expected = command.get("expected_version")
        if expected is not None and expected != state.version:
            return Decision([], _refusal("VERSION_MISMATCH", state))
        if action == "REPLACE":
            return self._accept(command, state.version + 1, command["posting"], now_millis)
        decision = self._accept(command, state.version + 1, state.posting, now_millis)
        decision.updates.append(None)  # the tombstone, so compaction can forget the posting
        return decision

    def forget_keys_before(self, cutoff_millis: int) -> None:
        """Drop idempotency keys accepted before the cutoff (the window has passed)."""
        while self._key_times and self._key_times[0][0] < cutoff_millis:
            accepted_at, posting_id, key = self._key_times.popleft()
            state = self.postings.get(posting_id)
            use = state.keys.get(key) if state is not None else None
            if use is not None and use.result.last_update_time_millis == accepted_at:  # not a later use
                del state.keys[key]  # type: ignore[union-attr]

    def _accept(self, command: dict[str, Any], version: int, posting: Any, now_millis: int) -> Decision:
        posting_id = command["posting_id"]
        update = {
            "posting_id": posting_id,
            "version": version,
            "op": _OP_OF[command["action"]],
            "idempotency_key": f"{posting_id}:{version}",
            "request_id": command["request_id"],
            "request_fingerprint": command.get("request_fingerprint", ""),
            "posting": posting,
            "last_update_time_millis": now_millis,
            "accepted_at": command["received_at"],
        }
        self.apply(posting_id, update)
        return Decision([update], self.postings[posting_id].as_result())


def _refusal(outcome: Outcome, state: PostingState) -> Result:
    version = state.version if state.version >= 0 else None
    return Result(outcome, version, state.deleted, state.last_update_time_millis)
