"""The sequencer's decisions, on the pure posting state (no Kafka)."""

from producer_api.domain import RECENT_REQUESTS, PartitionState

SNAPSHOT = {"title": "Engineer", "description": "d", "notes": ""}


def command(action, request_id, posting_id="p1", expected=None, title="Engineer"):
    posting = None if action == "DELETE" else {**SNAPSHOT, "title": title}
    return {
        "request_id": request_id,
        "posting_id": posting_id,
        "action": action,
        "expected_version": expected,
        "posting": posting,
        "received_at": 1,
    }


def test_versions_start_at_zero_and_grow_by_one():
    state = PartitionState()
    versions = [state.decide(command("CREATE", "r0"), 10).result.version]
    versions += [state.decide(command("REPLACE", f"r{i}"), 10 + i).result.version for i in range(1, 4)]
    assert versions == [0, 1, 2, 3]


def test_accepted_update_carries_the_idempotency_key_and_times():
    state = PartitionState()
    (update,) = state.decide(command("CREATE", "r0"), 1234).updates
    assert update["idempotency_key"] == "p1:0"
    assert update["op"] == "CREATED"
    assert update["last_update_time_millis"] == 1234
    assert update["accepted_at"] == 1


def test_a_repeated_request_gets_the_original_answer_and_writes_nothing():
    state = PartitionState()
    state.decide(command("CREATE", "r0"), 1)
    first = state.decide(command("REPLACE", "same", title="A"), 2)
    state.decide(command("REPLACE", "other", title="B"), 3)

    again = state.decide(command("REPLACE", "same", title="A"), 4)

    assert again.updates == []
    assert again.result == first.result
    assert again.result.version == 1


def test_only_recent_requests_are_remembered():
    state = PartitionState()
    state.decide(command("CREATE", "r0"), 1)
    for i in range(RECENT_REQUESTS + 1):
        state.decide(command("REPLACE", f"r{i + 1}"), 1)
    assert "r0" not in state.postings["p1"].recent
    assert f"r{RECENT_REQUESTS + 1}" in state.postings["p1"].recent


def test_refusals_write_nothing():
    state = PartitionState()
    assert state.decide(command("REPLACE", "a"), 1).result.outcome == "NOT_FOUND"
    assert state.decide(command("DELETE", "b"), 1).result.outcome == "NOT_FOUND"
    state.decide(command("CREATE", "c"), 1)
    mismatch = state.decide(command("REPLACE", "d", expected=5), 1)
    assert (mismatch.result.outcome, mismatch.result.version, mismatch.updates) == ("VERSION_MISMATCH", 0, [])
    assert state.decide(command("CREATE", "e"), 1).result.outcome == "ALREADY_EXISTS"


def test_delete_is_a_deleted_version_then_a_tombstone_and_then_gone():
    state = PartitionState()
    state.decide(command("CREATE", "c"), 1)
    deleted = state.decide(command("DELETE", "d"), 2)

    assert [u and (u["version"], u["op"]) for u in deleted.updates] == [(1, "DELETED"), None]
    assert deleted.updates[0]["posting"] == SNAPSHOT  # the board closes what it had
    for action in ("REPLACE", "DELETE", "CREATE"):
        assert state.decide(command(action, f"after-{action}"), 3).result.outcome == "GONE"


def test_restoring_from_the_log_gives_the_same_state():
    live = PartitionState()
    records = []
    for cmd in (command("CREATE", "a"), command("REPLACE", "b"), command("CREATE", "x", posting_id="p2")):
        records += [(cmd["posting_id"], u) for u in live.decide(cmd, 5).updates]
    records += [("p2", u) for u in live.decide(command("DELETE", "y", posting_id="p2"), 6).updates]

    restored = PartitionState()
    for posting_id, update in records:
        restored.apply(posting_id, update)

    assert restored.postings == live.postings
    assert restored.decide(command("REPLACE", "b"), 7).result.version == 1  # retry known after restore


def test_a_tombstone_alone_means_deleted_not_unknown():
    state = PartitionState()
    state.apply("p9", None)  # compaction kept only the tombstone
    assert state.decide(command("CREATE", "again", posting_id="p9"), 1).result.outcome == "GONE"
