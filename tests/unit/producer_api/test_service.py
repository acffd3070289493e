"""The service layer with a fake sequencer: the command it sends, what it makes of the
reply, and how it reads delivery progress."""

import asyncio
import dataclasses

import pytest
from confluent_kafka import Message

from producer_api.read.log_view import ViewStatus
from producer_api.read.progress import Progress, ProgressStatus
from producer_api.read.views import DeliveriesView, PostingsView
from producer_api.service import (
    Caller,
    PostingError,
    PostingService,
    Refusal,
    Unavailable,
    create_id,
    request_fingerprint,
)
from runtime.deliveries import state_record
from runtime.kafka import KafkaSettings
from runtime.stores import PartitionStore
from schemas.model import (
    ANY_EMPLOYER,
    DEFAULT_EMPLOYER,
    Action,
    Command,
    DeliveryState,
    DeliveryStatus,
    Destination,
    Outcome,
    Posting,
    Reply,
)
from schemas.partitioning import partition_for


class FakeCommands:
    def __init__(self, outcome: Outcome = Outcome.ACCEPTED, version: int = 0, deleted: bool = False):
        self.sent: list[Command] = []
        self.answer = (outcome, version, deleted)

    async def send(self, command: Command, timeout_s: float) -> Reply:
        self.sent.append(command)
        outcome, version, deleted = self.answer
        return Reply(command.request_id, "c", command.posting_id, outcome, version, deleted, 1234)


def service(commands: FakeCommands) -> PostingService:
    kafka = KafkaSettings()  # the views are never started: nothing connects
    return PostingService(commands, PostingsView(kafka), DeliveriesView(kafka), None, 1.0)  # type: ignore[arg-type]


CALLER = Caller("dev-token-1", operator=True)


def test_fingerprints_are_the_ones_already_in_the_log():
    # Computed by the release that took dict bodies: a retried request must still match.
    posting = Posting("Ingénieur", "d", "n")
    assert request_fingerprint(Action.CREATE, posting) == "b64943d890ac72ba67cec834f10ec6a2"
    assert request_fingerprint(Action.REPLACE, Posting("T", "", "")) == "947b8ce5380aee8f03a5ed2fa9494bd1"
    assert request_fingerprint(Action.DELETE, None) == "72767cd288b80ca8ffd0bc9198f949bf"


def test_the_optional_fields_count_in_the_fingerprint_only_when_given():
    plain = Posting("T", "", "")
    assert request_fingerprint(Action.REPLACE, dataclasses.replace(plain, location=None)) == (
        request_fingerprint(Action.REPLACE, plain)
    )
    located = dataclasses.replace(plain, location="Berlin")
    assert request_fingerprint(Action.REPLACE, located) != request_fingerprint(Action.REPLACE, plain)


def test_a_write_carries_who_sent_it_and_for_which_employer():
    commands = FakeCommands()
    acme = Caller("ats-acme", employer="acme")
    asyncio.run(service(commands).create(acme, Posting("T", ""), "key-1"))
    asyncio.run(service(commands).replace(acme, "p1", Posting("T", ""), None, None))
    asyncio.run(service(commands).replace(CALLER, "p1", Posting("T", ""), None, None))
    assert [(c.employer, c.actor) for c in commands.sent] == [
        ("acme", "ats-acme"), ("acme", "ats-acme"), (ANY_EMPLOYER, "dev-token-1"),
    ]  # fmt: skip


def test_create_ids_follow_the_key_within_one_employer():
    # The default employer's ids are the ones earlier releases derived: a retry across an
    # upgrade still finds its posting.
    assert create_id(DEFAULT_EMPLOYER, "key-1") == "e3595d39-9dbf-5c81-9e43-d81572df4a36"
    assert create_id("acme", "key-1") == create_id("acme", "key-1")
    assert create_id("acme", "key-1") != create_id("globex", "key-1")
    assert create_id("acme", "key-1") != create_id(DEFAULT_EMPLOYER, "key-1")
    assert create_id("acme", None) != create_id("acme", None)


def test_a_create_sends_one_command_and_answers_with_the_accepted_version():
    commands = FakeCommands()
    posting = Posting("Engineer", "Builds things")

    view = asyncio.run(service(commands).create(CALLER, posting, "key-1"))

    (command,) = commands.sent
    assert (command.action, command.request_id, command.posting, command.expected_version) == (
        Action.CREATE, "key-1", posting, None,
    )  # fmt: skip
    assert command.request_fingerprint == request_fingerprint(Action.CREATE, posting)
    assert (view.id, view.version, view.deleted, view.posting) == (command.posting_id, 0, False, posting)
    again = asyncio.run(service(FakeCommands()).create(CALLER, posting, "key-1"))
    assert again.id == view.id  # the id follows from the key, so a retried create lands on it


def test_a_refusal_is_a_posting_error_naming_the_outcome():
    with pytest.raises(PostingError) as refused:
        asyncio.run(service(FakeCommands(Outcome.GONE, 3, True)).delete(CALLER, "p1", None, 2))
    assert (refused.value.kind, refused.value.version) == (Refusal.GONE, 3)
    assert refused.value.detail == "the posting was deleted"


def test_progress_covers_every_destination_with_pending_where_nothing_is_recorded(tmp_path):
    postings = service(FakeCommands(version=2))
    asyncio.run(postings.replace(CALLER, "p1", Posting("T", ""), None, None))
    state = DeliveryState(Destination.SEARCH, "p1", DeliveryStatus.DELIVERED, delivered_version=2, attempts=1)
    record = state_record("jobpost.deliveries", 0, state)
    deliveries = postings.deliveries_view
    store = deliveries.stores.open[partition_for("p1", deliveries.kafka.partitions)] = PartitionStore(
        tmp_path / "deliveries", "unit-test"
    )  # what the follower would have opened
    store.write(deliveries.apply(Message(key=str(record.key).encode(), value=record.value)), 1)

    view, progress = postings.deliveries("p1")

    assert view.version == 2
    assert progress == [
        Progress(Destination.LINKEDIN, ProgressStatus.PENDING),
        Progress(Destination.INDEED, ProgressStatus.PENDING),
        Progress(Destination.SEARCH, ProgressStatus.DELIVERED, delivered_version=2, attempts=1),
    ]


def test_an_unknown_posting_is_not_found_only_once_its_partition_was_read():
    postings = service(FakeCommands())
    view = postings.view  # never started: no partition has been read yet
    with pytest.raises(Unavailable):
        asyncio.run(postings.get("p-unknown", strong=False, timeout_s=1))

    view.status = ViewStatus(following=True)  # as the follower publishes it: every partition caught up
    with pytest.raises(PostingError) as refused:
        asyncio.run(postings.get("p-unknown", strong=False, timeout_s=1))
    assert refused.value.kind == Refusal.NOT_FOUND
