"""The sequencer's decisions, on the pure posting state (no Kafka)."""

import dataclasses

import pytest

from schemas import codec
from schemas.model import Action, Command, Op, Outcome, Posting, PostingUpdate
from sequencer.domain import IDEMPOTENCY_WINDOW_MS, MAX_KEYS, PartitionState

SNAPSHOT = Posting("Engineer", "d", "")


def command(
    action, request_id, posting_id="p1", expected=None, title="Engineer", fingerprint=None
) -> Command:
    action = Action(action)
    return Command(
        request_id=request_id,
        posting_id=posting_id,
        action=action,
        received_at=1,
        posting=None if action == Action.DELETE else dataclasses.replace(SNAPSHOT, title=title),
        expected_version=expected,
        correlation_id=f"c-{request_id}",
        request_fingerprint=fingerprint if fingerprint is not None else f"{action}:{title}",
    )


def test_versions_start_at_zero_and_grow_by_one():
    state = PartitionState()
    versions = [state.decide(command("CREATE", "r0"), 10).result.version]
    versions += [state.decide(command("REPLACE", f"r{i}"), 10 + i).result.version for i in range(1, 4)]
    assert versions == [0, 1, 2, 3]


def test_accepted_update_carries_the_idempotency_key_fingerprint_and_times():
    state = PartitionState()
    (update,) = state.decide(command("CREATE", "r0"), 1234).updates
    assert update == PostingUpdate(
        posting_id="p1",
        version=0,
        op=Op.CREATED,
        idempotency_key="p1:0",
        request_id="r0",
        posting=SNAPSHOT,
        last_update_time_millis=1234,
        accepted_at=1,
        request_fingerprint="CREATE:Engineer",
    )


def test_a_repeated_request_gets_the_original_answer_and_writes_nothing():
    state = PartitionState()
    state.decide(command("CREATE", "r0"), 1)
    first = state.decide(command("REPLACE", "same", title="A"), 2)
    state.decide(command("REPLACE", "other", title="B"), 3)

    again = state.decide(command("REPLACE", "same", title="A"), 4)

    assert again.updates == []
    assert again.result == first.result
    assert again.result.version == 1


def test_a_key_reused_for_another_body_or_method_is_refused_and_writes_nothing():
    state = PartitionState()
    state.decide(command("CREATE", "r0"), 1)
    state.decide(command("REPLACE", "k", title="A"), 2)

    other_body = state.decide(command("REPLACE", "k", title="B"), 3)
    other_method = state.decide(command("DELETE", "k"), 4)

    assert (other_body.result.outcome, other_body.updates) == (Outcome.KEY_REUSED, [])
    assert (other_method.result.outcome, other_method.updates) == (Outcome.KEY_REUSED, [])
    assert state.get("p1").version == 1


def test_one_key_on_two_postings_is_two_requests():
    state = PartitionState()
    for posting_id in ("a", "b"):
        state.decide(command("CREATE", f"create-{posting_id}", posting_id=posting_id), 1)
    on_a = state.decide(command("REPLACE", "update-1", posting_id="a", title="A"), 2)
    on_b = state.decide(command("REPLACE", "update-1", posting_id="b", title="B"), 3)
    assert on_a.updates[0].posting.title == "A"
    assert on_b.updates[0].posting.title == "B"
    assert (on_a.result.version, on_b.result.version) == (1, 1)


def test_a_busy_posting_remembers_every_key_for_24_hours_and_then_forgets():
    state = PartitionState()
    state.decide(command("CREATE", "r0"), 0)
    for i in range(1, 1001):
        state.decide(command("REPLACE", f"r{i}", title=str(i)), i)
    assert state.decide(command("REPLACE", "r1", title="1"), 2000).result.version == 1  # no cap of 32

    later = IDEMPOTENCY_WINDOW_MS + 500
    state.decide(command("REPLACE", "fresh", title="x"), later)
    assert "r1" not in state.get("p1").keys and "r999" in state.get("p1").keys
    assert state.decide(command("REPLACE", "r1", title="again"), later).result.version == 1002


def test_a_posting_written_more_often_keeps_its_newest_keys_and_a_record_kafka_takes():
    state = PartitionState()
    state.decide(command("CREATE", "k" * 255), 0)
    for i in range(1, MAX_KEYS + 50):
        state.decide(command("REPLACE", f"{i:0>255}", title=str(i)), i)
    keys = state.get("p1").keys
    assert len(keys) == MAX_KEYS and "k" * 255 not in keys and f"{MAX_KEYS + 49:0>255}" in keys
    retry = state.decide(command("REPLACE", f"{MAX_KEYS + 49:0>255}", title=str(MAX_KEYS + 49)), 5000)
    assert retry.updates == []  # the newest writes are still recognised
    record = codec.sequencer_states().encode(state.take()["p1"].record("p1"))
    assert len(record) < 500_000  # Kafka refuses records over 1 MB


def test_a_key_used_again_after_its_window_is_not_forgotten_with_the_old_use():
    restored = PartitionState()
    restored.apply("p1", _update("p1", 0, "CREATED", "k", at=0))
    restored.apply("p1", _update("p1", 1, "UPDATED", "k", at=IDEMPOTENCY_WINDOW_MS + 10))
    decision = restored.decide(command("REPLACE", "k", fingerprint="f"), IDEMPOTENCY_WINDOW_MS + 20)
    assert decision.updates == [] and decision.result.version == 1


def test_state_keeps_no_text_of_old_versions_and_none_of_a_deleted_posting():
    state = PartitionState()
    state.decide(command("CREATE", "c", title="First"), 1)
    state.decide(command("REPLACE", "r", title="Second"), 2)
    assert not hasattr(state.get("p1"), "posting")
    assert all(not hasattr(use, "posting") for use in state.get("p1").keys.values())
    state.decide(command("DELETE", "d"), 3)
    taken = state.take()  # committed: what goes to the changelog and the local store
    assert taken["p1"].record("p1").version == 2 and not hasattr(taken["p1"].record("p1"), "posting")


def test_refusals_write_nothing():
    state = PartitionState()
    assert state.decide(command("REPLACE", "a"), 1).result.outcome == Outcome.NOT_FOUND
    assert state.decide(command("DELETE", "b"), 1).result.outcome == Outcome.NOT_FOUND
    state.decide(command("CREATE", "c"), 1)
    mismatch = state.decide(command("REPLACE", "d", expected=5), 1)
    assert (mismatch.result.outcome, mismatch.result.version, mismatch.updates) == (
        Outcome.VERSION_MISMATCH,
        0,
        [],
    )
    assert state.decide(command("CREATE", "e"), 1).result.outcome == Outcome.ALREADY_EXISTS


def test_delete_is_a_deleted_version_then_a_tombstone_and_then_gone():
    state = PartitionState()
    state.decide(command("CREATE", "c"), 1)
    deleted = state.decide(command("DELETE", "d"), 2)

    assert [u and (u.version, u.op) for u in deleted.updates] == [(1, Op.DELETED), None]
    assert deleted.updates[0].posting == Posting(
        "", "", boards=()
    )  # no text: the boards' consumers kept theirs
    for action in ("REPLACE", "DELETE", "CREATE"):
        assert state.decide(command(action, f"after-{action}"), 3).result.outcome == Outcome.GONE
    assert state.decide(command("DELETE", "d"), 4).result.version == 1  # a retried delete: its answer


def test_restoring_from_the_log_gives_the_same_state():
    live = PartitionState()
    records = []
    for cmd in (command("CREATE", "a"), command("REPLACE", "b"), command("CREATE", "x", posting_id="p2")):
        records += [(cmd.posting_id, u) for u in live.decide(cmd, 5).updates]
    records += [("p2", u) for u in live.decide(command("DELETE", "y", posting_id="p2"), 6).updates]

    restored = PartitionState()
    for posting_id, update in records:
        restored.apply(posting_id, update)

    assert restored.pending == live.pending
    assert restored.decide(command("REPLACE", "b"), 7).result.version == 1  # retry known after restore
    assert restored.decide(command("REPLACE", "b", title="other"), 7).result.outcome == Outcome.KEY_REUSED


def test_a_tombstone_alone_means_deleted_not_unknown():
    state = PartitionState()
    state.apply("p9", None)  # compaction kept only the tombstone
    assert state.decide(command("CREATE", "again", posting_id="p9"), 1).result.outcome == Outcome.GONE


def test_a_command_without_the_posting_it_needs_writes_nothing_and_is_refused():
    state = PartitionState()
    with pytest.raises(ValueError, match="without a posting"):
        state.decide(dataclasses.replace(command("CREATE", "c"), posting=None), 1)
    assert state.pending == {}


def _update(posting_id, version, op, request_id, at) -> PostingUpdate:
    return PostingUpdate(
        posting_id, version, Op(op), f"{posting_id}:{version}", request_id, SNAPSHOT, at, at, "f"
    )


def test_a_request_without_an_idempotency_key_leaves_no_key_in_the_state():
    state = PartitionState()
    state.decide(command("CREATE", "k"), 1)
    keyless = dataclasses.replace(
        command("REPLACE", "made-by-the-api", title="v1"), correlation_id="made-by-the-api"
    )
    decision = state.decide(keyless, 2)
    assert decision.updates[0].request_id == "made-by-the-api"  # the log still says which request
    assert list(state.get("p1").keys) == ["k"]  # only a client's key can be repeated


def test_only_a_client_supplied_request_id_is_an_idempotency_key():
    assert command("REPLACE", "client-key").keyed
    assert not dataclasses.replace(command("REPLACE", "c-1"), correlation_id="c-1").keyed
    assert not dataclasses.replace(command("REPLACE", ""), correlation_id="").keyed


def sent_by(employer: str, cmd: Command, actor: str = "ats", operator: bool = False) -> Command:
    return dataclasses.replace(cmd, employer=employer, actor=actor, operator=operator)


def test_a_posting_belongs_to_the_employer_that_created_it_and_keeps_its_author_per_version():
    state = PartitionState()
    (created,) = state.decide(sent_by("acme", command("CREATE", "r0"), "ats-acme"), 1).updates
    (replaced,) = state.decide(sent_by("ops", command("REPLACE", "r1"), "operator", operator=True), 2).updates
    assert (created.employer, created.actor) == ("acme", "ats-acme")
    assert (replaced.employer, replaced.actor) == ("acme", "operator")  # an operator acts for acme
    assert (
        codec.sequencer_states()
        .decode(codec.sequencer_states().encode(state.take()["p1"].record("p1")))
        .employer
        == "acme"
    )


def test_another_employers_posting_is_answered_as_if_it_did_not_exist():
    state = PartitionState()
    state.decide(sent_by("acme", command("CREATE", "r0")), 1)
    state.decide(sent_by("acme", command("REPLACE", "shared-key", title="A")), 2)
    for cmd in (
        command("REPLACE", "shared-key", title="A"),  # even a replay of acme's own request
        command("REPLACE", "r9"),
        command("DELETE", "r10"),
    ):
        decision = state.decide(sent_by("globex", cmd), 3)
        assert (decision.updates, decision.result.outcome, decision.result.version) == (
            [],
            Outcome.NOT_FOUND,
            None,
        )
    assert state.decide(sent_by("acme", command("REPLACE", "r11")), 4).result.version == 2


def test_no_employer_value_reaches_every_employers_posting_only_the_operator_flag_does():
    # Issue 35: an OIDC claim `employer: "*"` was the wildcard an operator's commands carried.
    state = PartitionState()
    state.decide(sent_by("acme", command("CREATE", "r0")), 1)
    for employer in ("*", "", "default"):
        decision = state.decide(sent_by(employer, command("DELETE", f"d-{employer}")), 2)
        assert (decision.updates, decision.result.outcome) == ([], Outcome.NOT_FOUND)
    decision = state.decide(sent_by("ops", command("DELETE", "d-ops"), "operator", operator=True), 3)
    assert decision.result.outcome == Outcome.ACCEPTED and decision.updates[0].employer == "acme"
