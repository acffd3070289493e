"""A partition's state over its store: what a restored, committed or failed transaction leaves
for the next (the in-memory store of sequencer.posting_states; no Kafka)."""

import dataclasses

from schemas import codec
from schemas.changelog import SequencerState
from schemas.model import Op, Outcome, Posting
from sequencer.domain import IDEMPOTENCY_WINDOW_MS, PartitionState
from sequencer.posting_states import MemoryStates
from tests.unit.sequencer.test_domain import command


def _records_of(*states: PartitionState) -> dict[str, SequencerState]:
    """The committed state of each posting."""
    return {pid: s.record(pid) for state in states for pid, s in state.take().items()}


def _stored(records: dict[str, SequencerState]) -> MemoryStates:
    """A store holding these states as the changelog does."""
    encoded = [(pid.encode(), codec.sequencer_states().encode(r)) for pid, r in records.items()]
    return MemoryStates(encoded, checkpoint=len(encoded))


def test_a_state_loaded_from_the_changelog_continues_where_it_was():
    live = PartitionState()
    live.decide(command("CREATE", "c"), 1)
    first = live.decide(command("REPLACE", "k", title="A"), 2)
    records = _records_of(live)
    records["p1"] = dataclasses.replace(records["p1"], offset=41)  # where Kafka put version 1
    loaded = PartitionState(_stored(records))

    assert loaded.decide(command("REPLACE", "k", title="A"), 3).result == first.result  # a retry
    assert loaded.decide(command("REPLACE", "k", title="B"), 3).result.outcome == Outcome.KEY_REUSED
    deleted = loaded.decide(command("DELETE", "d"), 4)
    # The state holds no text and the delete needs none: its version carries none.
    assert [(u.version, u.op, u.posting) for u in deleted.updates if u] == [(2, Op.DELETED, Posting.erased())]


def test_a_decided_version_takes_the_offset_it_is_placed_at():
    live = PartitionState()
    live.decide(command("CREATE", "c"), 1)
    live.placed("p1", 77)
    assert _records_of(live)["p1"].offset == 77


def test_what_a_failed_transaction_decided_leaves_no_trace():
    live = PartitionState()
    live.decide(command("CREATE", "c"), 1)
    state = PartitionState(_stored(_records_of(live)))

    state.decide(command("REPLACE", "lost", title="never committed"), 2)
    state.discard()

    again = state.decide(command("REPLACE", "lost", title="never committed"), 3)
    assert (again.result.version, len(again.updates)) == (1, 1)  # decided anew, not "a retry"


def test_keys_past_the_window_are_not_carried_into_the_changelog():
    state = PartitionState()
    state.decide(command("CREATE", "old"), 0)
    state.decide(command("REPLACE", "new", title="x"), IDEMPOTENCY_WINDOW_MS + 1)
    (record,) = _records_of(state).values()
    assert [use.key for use in record.keys] == ["new"]


def test_what_the_store_kept_after_a_commit_is_what_the_next_transaction_reads():
    store = MemoryStates()
    state = PartitionState(store)
    state.decide(command("CREATE", "c"), 1)
    committed = [
        (pid.encode(), codec.sequencer_states().encode(s.record(pid))) for pid, s in state.take().items()
    ]

    store.put(committed, checkpoint=5)  # as the session does once the transaction committed

    assert store.checkpoint == 5 and state.pending == {}
    assert state.decide(command("REPLACE", "r", title="B"), 2).result.version == 1
    assert state.decide(command("CREATE", "c"), 3).result.version == 0  # the create's key, from the store
