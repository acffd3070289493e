"""The principals table (runtime.acls): who may write what, and that the names it grants are
the names the code uses. Its run against a broker with the authorizer on is
tests/e2e/test_kafka_acls.py."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, ResourcePatternType, ResourceType

from consumers.config import ConsumerSettings
from jobpost import cli
from jobpost.acls import _upsert_users, bindings
from runtime.acls import Grant, Operation, Resource, Role, principals, roles, table
from schemas.enums import Destination
from schemas.topics import BOARDS, Component, ReaderGroup, Topics
from search_indexer.config import IndexerSettings
from sequencer.config import SequencerSettings

TOPICS = Topics("jobpost")


def writers(topic: str) -> set[Role]:
    return {
        role
        for role, grants in roles(TOPICS).items()
        for g in grants
        if g.resource == Resource.TOPIC and not g.prefixed and g.name == topic
        if Operation.WRITE in g.operations
    }


def granted(role: Role, resource: Resource, name: str, operation: Operation) -> bool:
    """True when one of the role's grants covers `name` (literally or by prefix)."""
    return any(
        g.resource == resource
        and operation in g.operations
        and (name.startswith(g.name) if g.prefixed else name == g.name)
        for g in roles(TOPICS)[role]
    )


def test_each_topic_has_the_writers_the_design_names_and_no_other():
    assert writers(TOPICS.commands) == {Role.API}
    assert writers(TOPICS.audit) == {Role.API, Role.LINKEDIN, Role.INDEED}  # a refused redrive
    assert writers(TOPICS.postings) == {Role.SEQUENCER}
    assert writers(TOPICS.replies) == {Role.SEQUENCER}
    assert writers(TOPICS.sequencer_state) == {Role.SEQUENCER}
    assert writers(TOPICS.deliveries) == {Role.LINKEDIN, Role.INDEED, Role.INDEXER}
    assert writers(TOPICS.delivery_events) == {Role.LINKEDIN, Role.INDEED, Role.INDEXER}
    for board in BOARDS:
        assert writers(TOPICS.redrive(board)) == {Role.API, Role.OPERATOR}
    assert writers(TOPICS.dlq(Component.SEQUENCER)) == {Role.SEQUENCER}
    assert writers(TOPICS.dlq(Component.SEARCH_INDEXER)) == {Role.INDEXER}
    assert writers(TOPICS.dlq(Component.LINKEDIN)) == {Role.LINKEDIN}
    assert writers(TOPICS.dlq(Component.INDEED)) == {Role.INDEED}
    assert writers(TOPICS.board_status) == {Role.LINKEDIN, Role.INDEED}
    # ... and every topic we create is written by someone (a new topic needs its row).
    assert all(writers(spec.name) for spec in TOPICS.specs(3, 1))


def test_nothing_is_granted_by_prefix_but_descriptions_and_readers_groups():
    for role, grants in roles(TOPICS).items():
        for g in grants:
            if g.prefixed and g.resource == Resource.TOPIC:
                assert set(g.operations) == {Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS}, role
            if g.prefixed and g.resource == Resource.GROUP:
                assert g.operations == (Operation.DESCRIBE,), role


def test_every_reader_group_is_granted_to_someone_and_named_as_the_code_names_it():
    for purpose in ReaderGroup:
        name = TOPICS.reader_group(purpose)
        assert any(granted(role, Resource.GROUP, name, Operation.DESCRIBE) for role in Role), purpose


def test_the_groups_and_transactional_ids_granted_are_those_the_components_use():
    sequencer = SequencerSettings()
    assert granted(Role.SEQUENCER, Resource.GROUP, sequencer.group, Operation.READ)
    assert granted(Role.SEQUENCER, Resource.TRANSACTIONAL_ID, sequencer.transactional_id, Operation.WRITE)
    assert granted(Role.SEQUENCER, Resource.GROUP, f"{sequencer.group}-probe", Operation.DESCRIBE)
    assert not granted(Role.API, Resource.TRANSACTIONAL_ID, sequencer.transactional_id, Operation.WRITE)
    for board in BOARDS:
        group = ConsumerSettings(destination=board).group
        assert granted(Role(board.value), Resource.GROUP, group, Operation.READ)
        assert granted(Role(board.value), Resource.GROUP, f"{group}-redrive", Operation.READ)
        other = Destination.INDEED if board == Destination.LINKEDIN else Destination.LINKEDIN
        assert not granted(Role(other.value), Resource.GROUP, group, Operation.READ)
    assert granted(Role.INDEXER, Resource.GROUP, IndexerSettings().group, Operation.READ)


def test_a_board_consumer_reads_its_own_redrive_requests_only():
    assert granted(Role.LINKEDIN, Resource.TOPIC, TOPICS.redrive(Destination.LINKEDIN), Operation.READ)
    assert not granted(Role.LINKEDIN, Resource.TOPIC, TOPICS.redrive(Destination.INDEED), Operation.READ)
    assert not granted(Role.LINKEDIN, Resource.TOPIC, TOPICS.redrive(Destination.LINKEDIN), Operation.WRITE)


def test_principals_are_named_after_the_prefix_unless_given():
    found = {p.role: p for p in principals(Topics("acme"), {Role.API: "api-svc"})}

    assert found[Role.API].principal == "User:api-svc"
    assert found[Role.SEQUENCER].principal == "User:acme-sequencer"


def test_bindings_are_literal_or_prefixed_allowances():
    api = next(p for p in principals(TOPICS) if p.role == Role.API)

    made = bindings(api)

    assert len(made) == sum(len(g.operations) for g in api.grants)
    audit = [b for b in made if b.name == TOPICS.audit]
    assert [(b.restype, b.resource_pattern_type, b.operation) for b in audit] == [
        (ResourceType.TOPIC, ResourcePatternType.LITERAL, AclOperation.WRITE)
    ]
    assert all(b.principal == "User:jobpost-api" and b.host == "*" for b in made)
    prefixed = [b for b in made if b.resource_pattern_type == ResourcePatternType.PREFIXED]
    assert {b.name for b in prefixed if b.restype == ResourceType.TOPIC} == {"jobpost."}


def test_the_command_prints_the_table_without_a_cluster(capsys: pytest.CaptureFixture[str]):
    assert cli.main(["acls", "--user", "indexer=search-svc"]) == 0

    out = capsys.readouterr().out
    assert out.strip() == table(principals(TOPICS, {Role.INDEXER: "search-svc"}))
    assert "| `User:search-svc` (indexer) | topic | `jobpost.postings` | READ |" in out


def test_the_command_refuses_an_unknown_role(capsys: pytest.CaptureFixture[str]):
    assert cli.main(["acls", "--user", "mailer=x"]) == 2
    assert "mailer" in capsys.readouterr().err


def test_a_grant_shows_its_pattern():
    grant = Grant(Resource.GROUP, "jobpost-replay-", (Operation.DESCRIBE,), "why", prefixed=True)
    assert grant.pattern == "jobpost-replay-*"


def test_the_operations_page_shows_the_table_the_command_prints():
    page = (Path(__file__).resolve().parents[3] / "docs" / "operations" / "kafka-acls.md").read_text()

    assert table(principals(TOPICS)) in page


class _Admin:
    """What `_upsert_users` asks of an admin client: each user's credential, once."""

    def __init__(self) -> None:
        self.users: list[str] = []

    def alter_user_scram_credentials(self, upserts, request_timeout):  # type: ignore[no-untyped-def]
        self.users += [u.user for u in upserts]
        done: Future[None] = Future()
        done.set_result(None)
        return {u.user: done for u in upserts}


def test_an_api_with_its_sequencer_is_one_user_with_one_password():
    found = principals(TOPICS, {Role.API: "svc-api", Role.SEQUENCER: "svc-api"})
    admin = _Admin()

    assert _upsert_users(admin, found, {"api": "pw", "sequencer": "pw", "indexer": "pw2"}) == [  # type: ignore[arg-type]
        "svc-api",
        "jobpost-indexer",
    ]
    with pytest.raises(ValueError, match="two different passwords for the user svc-api"):
        _upsert_users(admin, found, {"api": "pw", "sequencer": "other"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mailer"):
        _upsert_users(admin, found, {"mailer": "pw"})  # type: ignore[arg-type]
