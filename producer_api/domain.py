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

from schemas.model import Action, Command, Op, Outcome, Posting, PostingUpdate

IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000
_OP_OF = {Action.CREATE: Op.CREATED, Action.REPLACE: Op.UPDATED, Action.DELETE: Op.DELETED}
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

    action: Action
    fingerprint: str
    result: Result

    def matches(self, action: Action, fingerprint: str) -> bool:
        # Records written before fingerprints existed carry none: the action must still match.
        return self.action == action and (not self.fingerprint or self.fingerprint == fingerprint)


@dataclass
class PostingState:
    version: int
    deleted: bool
    posting: Posting | None
    last_update_time_millis: int | None
    keys: dict[str, KeyUse] = field(default_factory=dict)

    def as_result(self) -> Result:
        return Result(Outcome.ACCEPTED, self.version, self.deleted, self.last_update_time_millis)


@dataclass
class Decision:
    """Records for `jobpost.postings` (value None is a tombstone) and the reply."""

    updates: list[PostingUpdate | None]
    result: Result


class PartitionState:
    def __init__(self, window_ms: int = IDEMPOTENCY_WINDOW_MS) -> None:
        self.postings: dict[str, PostingState] = {}
        self.window_ms = window_ms
        self._key_times: deque[tuple[int, str, str]] = deque()  # (accepted at, posting, key)

    def apply(self, posting_id: str, update: PostingUpdate | None) -> None:
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
        deleted = update.op == Op.DELETED
        state = current or PostingState(update.version, deleted, None, None)
        state.version = update.version
        state.deleted = deleted
        state.posting = None if deleted else update.posting
        state.last_update_time_millis = update.last_update_time_millis
        self.postings[posting_id] = state
        use = KeyUse(_ACTION_OF[update.op], update.request_fingerprint, state.as_result())
        state.keys[update.request_id] = use
        self._key_times.append((update.last_update_time_millis, posting_id, update.request_id))

    def decide(self, command: Command, now_millis: int) -> Decision:
        self.forget_keys_before(now_millis - self.window_ms)
        action = command.action
        state = self.postings.get(command.posting_id)
        used = state.keys.get(command.request_id) if state is not None else None
        if used is not None:
            if used.matches(action, command.request_fingerprint):
                return Decision([], used.result)  # a retry: the original answer, nothing written
            return Decision([], Result(Outcome.KEY_REUSED))

        if action == Action.CREATE:
            if state is not None:
                refused = Outcome.GONE if state.deleted else Outcome.ALREADY_EXISTS
                return Decision([], _refusal(refused, state))
            return self._accept(command, 0, command.posting, now_millis)
        if state is None:
            return Decision([], Result(Outcome.NOT_FOUND))
        if state.deleted:
            return Decision([], _refusal(Outcome.GONE, state))
        expected = command.expected_version
        if expected is not None and expected != state.version:
            return Decision([], _refusal(Outcome.VERSION_MISMATCH, state))
        if action == Action.REPLACE:
            return self._accept(command, state.version + 1, command.posting, now_millis)
        # A posting that is not deleted keeps its text: the DELETED version carries it, so
        # the boards close what they had.
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

    def _accept(self, command: Command, version: int, posting: Posting | None, now_millis: int) -> Decision:
        if posting is None:  # records.command refuses such a command; a state never holds one
            raise ValueError(f"a {command.action} of {command.posting_id!r} without a posting")
        posting_id = command.posting_id
        update = PostingUpdate(
            posting_id=posting_id,
            version=version,
            op=_OP_OF[command.action],
            idempotency_key=f"{posting_id}:{version}",
            request_id=command.request_id,
            posting=posting,
            last_update_time_millis=now_millis,
            accepted_at=command.received_at,
            request_fingerprint=command.request_fingerprint,
        )
        self.apply(posting_id, update)
        return Decision([update], self.postings[posting_id].as_result())


def _refusal(outcome: Outcome, state: PostingState) -> Result:
    version = state.version if state.version >= 0 else None
    return Result(outcome, version, state.deleted, state.last_update_time_millis)
