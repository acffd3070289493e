"""A dead letter goes to its group's topic, unchanged, with headers saying why; the headers
read back as they were written, and a letter with garbled headers still reads."""

from confluent_kafka import Message
from prometheus_client import REGISTRY

from runtime.dead_letters import dead_letter
from schemas.dead_letters import DeadLetterHeaders
from schemas.topics import Component, Topics


def test_the_indexers_letters_go_to_its_groups_topic_and_count_under_its_group():
    message = Message(topic="t.postings", partition=2, offset=7, key=b"p1", value=b"\xc3\x01junk")
    before = letters_of("search-indexer")

    letter = dead_letter(Topics("t"), Component.SEARCH_INDEXER, message, "unreadable", posting_id="p1")

    assert (letter.topic, letter.key, letter.value) == ("t.search-indexer.dlq", b"p1", b"\xc3\x01junk")
    headers = DeadLetterHeaders.parse(letter.headers)
    assert (headers.source_topic, headers.source_partition, headers.source_offset) == ("t.postings", 2, 7)
    assert (headers.error, headers.attempts) == ("unreadable", 1)
    assert letters_of("search-indexer") == before + 1


def test_headers_read_back_as_written():
    written = DeadLetterHeaders("board said 400", "p.postings", 4, 99, 7, 1_000, 2_000)
    assert DeadLetterHeaders.parse(written.to_headers()) == written


def test_garbled_or_missing_headers_read_as_unknown_not_as_an_error():
    headers = DeadLetterHeaders.parse([("jobpost.attempts", b"many"), ("jobpost.source_offset", None)])
    assert (headers.error, headers.attempts, headers.source_offset, headers.last_attempt_ms) == (
        "",
        1,
        -1,
        None,
    )
    assert DeadLetterHeaders.parse(None).source_topic == ""


def test_an_error_longer_than_a_header_should_hold_is_cut():
    headers = dict(DeadLetterHeaders("x" * 10_000, "t", 0, 0).to_headers())
    assert len(headers["jobpost.error"]) == 4000


def letters_of(group: str) -> float:
    return REGISTRY.get_sample_value("jobpost_dead_letters_total", {"group": group}) or 0.0
