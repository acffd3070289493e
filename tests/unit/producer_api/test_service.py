"""The service layer with a fake sequencer: the command it sends, what it makes of the
reply, and how it reads delivery progress."""

import asyncio
import dataclasses

import pytest
from confluent_kafka import Message

from producer_api.callers import EVERY_SCOPE
from producer_api.commands import NotWritten, OutcomeUnknown
from producer_api.read.log_view import ViewStatus
from producer_api.read.progress import Progress, ProgressStatus
from producer_api.read.views import DeliveriesView, PostingsView
from producer_api.service import (
    Caller,
    NotApplied,
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
from schemas.deliveries import DeliveryState
from schemas.enums import DeliveryStatus
from schemas.model import DEFAULT_EMPLOYER, Action, Command, Destination, Outcome, Posting, Reply
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


CALLER = Caller("dev-token-1", scopes=EVERY_SCOPE)
ACME = Caller("ats-acme", "acme")


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
    # An operator's command names its own employer and says it is an operator's: no employer
    # value stands for every employer.
    assert [(c.employer, c.operator, c.actor) for c in commands.sent] == [
        ("acme", False, "ats-acme"),
        ("acme", False, "ats-acme"),
        (DEFAULT_EMPLOYER, True, "dev-token-1"),
    ]


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
        Action.CREATE,
        "key-1",
        posting,
        None,
    )
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
    asyncio.run(postings.replace(ACME, "p1", Posting("T", ""), None, None))
    state = DeliveryState(Destination.SEARCH, "p1", DeliveryStatus.DELIVERED, delivered_version=2, attempts=1)
    record = state_record("jobpost.deliveries", 0, state)
    deliveries = postings.deliveries_view
    store = deliveries.stores.open[partition_for("p1", deliveries.kafka.partitions)] = PartitionStore(
        tmp_path / "deliveries", "unit-test"
    )  # what the follower would have opened
    store.write(deliveries.apply(Message(key=str(record.key).encode(), value=record.value)), 1)

    view, progress = postings.deliveries(ACME, "p1")

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
        asyncio.run(postings.get(CALLER, "p-unknown", strong=False, timeout_s=1))

    view.status = ViewStatus(following=True)  # as the follower publishes it: every partition caught up
    with pytest.raises(PostingError) as refused:
        asyncio.run(postings.get(CALLER, "p-unknown", strong=False, timeout_s=1))
    assert refused.value.kind == Refusal.NOT_FOUND


class FailingCommands(FakeCommands):
    def __init__(self, failure: Exception):
        super().__init__()
        self.failure = failure

    async def send(self, command: Command, timeout_s: float) -> Reply:
        raise self.failure


def test_only_a_write_that_can_never_be_applied_is_not_applied():
    expired = service(FakeCommands(Outcome.EXPIRED, None))  # type: ignore[arg-type]
    with pytest.raises(NotApplied):
        asyncio.run(expired.replace(CALLER, "p1", Posting("T", ""), None, None))
    refused = service(FailingCommands(NotWritten("the command was refused: MSG_SIZE_TOO_LARGE")))
    with pytest.raises(NotApplied):
        asyncio.run(refused.create(CALLER, Posting("T", ""), None))


def test_a_write_without_a_verdict_is_of_unknown_outcome_not_unavailable():
    silent = service(FailingCommands(OutcomeUnknown("no verdict from the sequencer within 10 s", 9)))
    with pytest.raises(OutcomeUnknown) as unknown:
        asyncio.run(silent.replace(CALLER, "p1", Posting("T", ""), "key-1", None))
    assert unknown.value.settled_in_s == 9
    assert not isinstance(unknown.value, Unavailable)


def test_another_employers_posting_is_not_found_on_every_read_and_an_operator_sees_it(tmp_path):
    postings = service(FakeCommands(version=0))
    asyncio.run(postings.create(ACME, Posting("T", ""), "k1"))  # read-your-writes: the view knows it
    (posting_id,) = [c.posting_id for c in postings.commands.sent]  # type: ignore[attr-defined]
    other = Caller("ats-globex", "globex")

    for read in (
        lambda c: asyncio.run(postings.get(c, posting_id, strong=False, timeout_s=1)),
        lambda c: postings.deliveries(c, posting_id),
        lambda c: postings.timeline(c, posting_id),
    ):
        with pytest.raises(PostingError) as refused:
            read(other)
        assert refused.value.kind == Refusal.NOT_FOUND and refused.value.version is None
        assert read(ACME) is not None and read(CALLER) is not None


def test_an_accepted_write_is_audited_with_its_credential_and_version():
    class Recorder:
        def __init__(self) -> None:
            self.seen: list[tuple[str, Action, str, int]] = []

        def accepted(self, caller: Caller, action: Action, posting_id: str, version: int) -> None:
            self.seen.append((caller.name, action, posting_id, version))

    audit = Recorder()
    kafka = KafkaSettings()
    postings = PostingService(
        FakeCommands(version=3),
        PostingsView(kafka),
        DeliveriesView(kafka),
        None,
        1.0,
        audit=audit,  # type: ignore[arg-type]
    )
    asyncio.run(postings.replace(ACME, "p1", Posting("T", ""), None, None))
    postings.commands.answer = (Outcome.NOT_FOUND, None, False)  # type: ignore[attr-defined]
    with pytest.raises(PostingError):  # refused: nothing written, nothing audited
        asyncio.run(postings.replace(ACME, "p2", Posting("T", ""), None, None))

    assert audit.seen == [("ats-acme", Action.REPLACE, "p1", 3)]
