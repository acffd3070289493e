"""The posting aggregate and the sequencer's decision for one command. Pure: no Kafka here.

A `PartitionState` is what the sequencer knows of the postings of one partition: for each,
its version, whether it is deleted, where its newest version lies in `jobpost.postings`, and
the idempotency keys accepted within the window — never its text. It looks postings up in
its `store` (a `PostingStateStore`: the sequencer's local store, restored from
`jobpost.sequencer-state`) and keeps what the current transaction decided in `pending`,
which the sequencer writes to the changelog in the same transaction and to the store once
it committed (`take`), or throws away if it did not (`discard`). The store is a small
protocol, so the decisions are unit-tested with the in-memory `MemoryStates`. A delete needs
no text: its DELETED version carries none (`Posting.erased`).

Idempotency keys follow the IETF `Idempotency-Key` draft: a key belongs to one posting;
within the window (24 hours) a repeat of the same request (same method, same body) is
answered with the original result and writes nothing, and the same key with another
request is refused (`KEY_REUSED`). Per key the state keeps only what a replay needs: the
method, a fingerprint of the request and the result. A posting keeps its newest
`MAX_KEYS` keys at most: its keys travel in its one changelog record, which must stay far
below Kafka's 1 MB record limit (a record over it would stop the sequencer for every
posting), so a posting written more often than that within the window recognises
retries of its newest `MAX_KEYS` writes only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.changelog import KeyUse, SequencerState
from schemas.model import (
    DEFAULT_EMPLOYER,
    Action,
    Command,
    Op,
    Outcome,
    Posting,
    PostingUpdate,
    Reply,
)
from sequencer.posting_states import MemoryStates, PostingStateStore

IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000
DEFAULT_BUDGET_MS = 10_000  # a command of a release before budgets: its API waited 10 s
MAX_KEYS = 1000  # per posting: at most ~300 KB of keys (255 characters each) in its record
_OP_OF = {Action.CREATE: Op.CREATED, Action.REPLACE: Op.UPDATED, Action.DELETE: Op.DELETED}
_ACTION_OF = {op: action for action, op in _OP_OF.items()}


@dataclass(frozen=True)
class Result:
    """What a command ended as: the reply's content."""

    outcome: Outcome
    version: int | None = None
    deleted: bool = False
    last_update_time_millis: int | None = None

    def reply_to(self, command: Command) -> Reply:
        return Reply(
            request_id=command.request_id,
            correlation_id=command.correlation_id,
            posting_id=command.posting_id,
            outcome=self.outcome,
            version=self.version,
            deleted=self.deleted,
            last_update_time_millis=self.last_update_time_millis,
        )


@dataclass
class PostingState:
    version: int  # -1: only a tombstone is known
    deleted: bool
    last_update_time_millis: int | None
    offset: int = -1  # of the newest version in jobpost.postings; -1 until known
    keys: dict[str, KeyUse] = field(default_factory=dict)  # in the order they were accepted
    employer: str = DEFAULT_EMPLOYER  # whose posting it is; never changes

    def reachable_by(self, command: Command) -> bool:
        """Whether the command's sender may change this posting: its own employer's, or any
        for an operator (a flag of the command, never an employer value)."""
        return command.operator or command.employer == self.employer

    def as_result(self) -> Result:
        return Result(Outcome.ACCEPTED, self.version, self.deleted, self.last_update_time_millis)

    def use(self, key: str, action: Action, fingerprint: str) -> None:
        self.keys.pop(key, None)  # a key used again moves to the end: the order stays by time
        at = self.last_update_time_millis or 0
        self.keys[key] = KeyUse(key, action, fingerprint, self.version, self.deleted, at)
        while len(self.keys) > MAX_KEYS:
            del self.keys[next(iter(self.keys))]

    def forget_keys_before(self, cutoff_millis: int) -> None:
        while self.keys:
            key, use = next(iter(self.keys.items()))
            if use.last_update_time_millis >= cutoff_millis:
                return
            del self.keys[key]

    def record(self, posting_id: str) -> SequencerState:
        return SequencerState(
            posting_id,
            self.version,
            self.deleted,
            self.last_update_time_millis,
            self.offset,
            tuple(self.keys.values()),
            self.employer,
        )

    @classmethod
    def of(cls, record: SequencerState) -> PostingState:
        keys = {use.key: use for use in record.keys}
        return cls(
            record.version,
            record.deleted,
            record.last_update_time_millis,
            record.offset,
            keys,
            employer=record.employer,
        )


@dataclass
class Decision:
    """Records for `jobpost.postings` (value None is a tombstone) and the reply."""

    updates: list[PostingUpdate | None]
    result: Result


def deadline_of(command: Command, appended_at_millis: int) -> int:
    """The broker time after which the command is never applied: its append time (a
    LogAppendTime, the broker's clock) plus the budget the API gave it. No host's wall
    clock takes part, so clock skew between the API and the sequencer changes nothing."""
    return appended_at_millis + (command.budget_ms or DEFAULT_BUDGET_MS)


class PartitionState:
    def __init__(
        self,
        store: PostingStateStore | None = None,
        window_ms: int = IDEMPOTENCY_WINDOW_MS,
    ) -> None:
        self.store: PostingStateStore = store if store is not None else MemoryStates()
        self.window_ms = window_ms
        self.pending: dict[str, PostingState] = {}  # looked up or decided in this transaction
        self.changed: set[str] = set()  # of those, the ones whose state changed

    def get(self, posting_id: str) -> PostingState | None:
        state = self.pending.get(posting_id)
        if state is None:
            record = self.store.get(posting_id)
            if record is not None:
                state = self.pending[posting_id] = PostingState.of(record)
        return state

    def take(self) -> dict[str, PostingState]:
        """The states changed since the last take (their transaction is being committed);
        what is looked up next comes from the store again."""
        taken = {posting_id: self.pending[posting_id] for posting_id in self.changed}
        self.pending, self.changed = {}, set()
        return taken

    def discard(self) -> None:
        """Forget what the current transaction decided: it was not committed."""
        self.pending, self.changed = {}, set()

    def apply(
        self, posting_id: str, update: PostingUpdate | None, offset: int = -1, keyed: bool = True
    ) -> None:
        """Fold one record of `jobpost.postings` in (None: a tombstone), as when deriving the
        state from the log. `keyed` False: its request id is not a client's Idempotency-Key,
        so nobody can repeat it and the state does not keep it."""
        state = self.get(posting_id)
        self.changed.add(posting_id)
        if update is None:
            if state is None:
                # Compaction kept only the tombstone: deleted, version forgotten.
                self.pending[posting_id] = PostingState(-1, True, None)
            else:
                state.deleted = True
            return
        deleted = update.op == Op.DELETED
        if state is None:
            state = self.pending[posting_id] = PostingState(update.version, deleted, None)
        state.version, state.deleted, state.employer = update.version, deleted, update.employer
        state.last_update_time_millis = update.last_update_time_millis
        state.offset = offset
        if keyed:
            state.use(update.request_id, _ACTION_OF[update.op], update.request_fingerprint)

    def placed(self, posting_id: str, offset: int) -> None:
        """The offset in jobpost.postings the posting's decided version is written at."""
        self.pending[posting_id].offset = offset

    def decide(self, command: Command, now_millis: int, deadline_millis: int | None = None) -> Decision:
        """`now_millis` and `deadline_millis` are broker times (sequencer.clock); past the
        deadline a command is answered EXPIRED and changes nothing, unless it repeats a
        request already applied (that answer is the original one: it writes nothing)."""
        action = command.action
        state = self.get(command.posting_id)
        if state is not None and not state.reachable_by(command):
            # Another employer's posting is answered as if it did not exist, before any key
            # is looked at: nothing of it (not even a replayed result) reaches this sender.
            outcome = Outcome.ALREADY_EXISTS if action == Action.CREATE else Outcome.NOT_FOUND
            return Decision([], Result(outcome))
        if state is not None:
            state.forget_keys_before(now_millis - self.window_ms)
            used = state.keys.get(command.request_id)
            if used is not None:
                if used.matches(action, command.request_fingerprint):  # a retry: the original answer
                    return Decision(
                        [], Result(Outcome.ACCEPTED, used.version, used.deleted, used.last_update_time_millis)
                    )
                return Decision([], Result(Outcome.KEY_REUSED))
        if deadline_millis is not None and now_millis > deadline_millis:
            return Decision([], Result(Outcome.EXPIRED))

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
        # The DELETED version carries no text (a board restates a job from what its consumer
        # keeps of it, which the close forgets), so compaction leaves none of the posting.
        decision = self._accept(command, state.version + 1, Posting.erased(), now_millis)
        decision.updates.append(None)  # the tombstone, so compaction can forget the posting
        return decision

    def _accept(self, command: Command, version: int, posting: Posting | None, now_millis: int) -> Decision:
        if posting is None:  # records.command refuses such a command; a state never holds one
            raise ValueError(f"a {command.action} of {command.posting_id!r} without a posting")
        posting_id = command.posting_id
        current = self.pending.get(posting_id)
        # An existing posting keeps its employer; a create makes one of the sender's.
        employer = current.employer if current is not None else command.employer
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
            employer=employer,
            actor=command.actor,
        )
        # Its offset follows once it is produced (`placed`). A key nobody can repeat is not
        # kept: it cost a busy posting's changelog record ~100 KB.
        self.apply(posting_id, update, keyed=command.keyed)
        state = self.pending[posting_id]
        return Decision([update], state.as_result())


def _refusal(outcome: Outcome, state: PostingState) -> Result:
    version = state.version if state.version >= 0 else None
    return Result(outcome, version, state.deleted, state.last_update_time_millis)
