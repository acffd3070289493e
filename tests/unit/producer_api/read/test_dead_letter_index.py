"""The index of a board's dead letters: bounded per partition, one entry per posting
version (the newest letter), no posting text (a store of its own, no Kafka)."""

from confluent_kafka import Message

from producer_api.read import dead_letter_index
from producer_api.read.dead_letter_index import DeadLettersView
from runtime.kafka import KafkaSettings
from runtime.stores import PartitionStore
from schemas import codec
from schemas.dead_letters import DeadLetterHeaders
from schemas.enums import Destination
from schemas.model import Op, Posting, PostingUpdate


def letter(offset: int, posting_id: str, version: int, error: str = "rejected") -> Message:
    update = PostingUpdate(
        posting_id,
        version,
        Op.UPDATED,
        f"{posting_id}:{version}",
        "r",
        Posting("Secret title", "Secret text"),
        1000,
        1000,
    )
    headers = DeadLetterHeaders(error, "jobpost.postings", 0, offset, 3, 1000 + offset, 2000 + offset)
    return Message(
        topic="jobpost.linkedin.dlq",
        partition=0,
        offset=offset,
        key=posting_id.encode(),
        value=codec.posting_updates().encode(update),
        headers=headers.to_headers(),
    )


def indexed(tmp_path, messages: list[Message]) -> tuple[DeadLettersView, PartitionStore]:
    view = DeadLettersView(KafkaSettings(), Destination.LINKEDIN)  # never started: nothing connects
    store = view.stores.open[0] = PartitionStore(tmp_path / "letters", "unit-test")
    for message in messages:
        store.write(view.apply(message), (message.offset() or 0) + 1)
    return view, store


def test_letters_are_listed_newest_first_without_the_postings_text(tmp_path):
    view, store = indexed(tmp_path, [letter(0, "p1", 0), letter(1, "p2", 4, "HTTP 400")])

    (newest, oldest) = view.newest()
    assert (newest.posting_id, newest.version, newest.op, newest.error, newest.attempts, newest.at) == (
        "p2",
        4,
        "UPDATED",
        "HTTP 400",
        3,
        2001,
    )
    assert (oldest.partition, oldest.offset, oldest.posting_id) == (0, 0, "p1")
    assert not any(b"Secret" in value for _, value in store.items())


def test_a_version_refused_again_keeps_only_its_newest_letter(tmp_path):
    view, _ = indexed(
        tmp_path, [letter(0, "p1", 2, "first"), letter(1, "p9", 0), letter(2, "p1", 2, "again")]
    )
    assert [(x.posting_id, x.version, x.offset, x.error) for x in view.newest()] == [
        ("p1", 2, 2, "again"),
        ("p9", 0, 1, "rejected"),
    ]


def test_the_index_keeps_the_newest_letters_of_a_partition_only(tmp_path, monkeypatch):
    monkeypatch.setattr(dead_letter_index, "KEPT", 5)
    view, store = indexed(tmp_path, [letter(n, f"p{n}", 0) for n in range(12)])

    assert [x.offset for x in view.newest()] == [11, 10, 9, 8, 7]
    assert len(list(store.items())) == 10  # five letters and their five version entries

    # A view opened again on the same store (a restart) goes on bounding it.
    again = DeadLettersView(KafkaSettings(), Destination.LINKEDIN)
    again.stores.open[0] = store
    store.write(again.apply(letter(12, "p12", 0)), 13)
    assert [x.offset for x in again.newest()] == [12, 11, 10, 9, 8]
