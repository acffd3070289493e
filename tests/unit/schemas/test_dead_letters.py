"""A dead letter goes to its group's topic, unchanged, with headers saying why."""

from confluent_kafka import Message
from prometheus_client import REGISTRY

from schemas.dead_letters import dead_letter
from schemas.topics import DEAD_LETTER_GROUPS, Topics


def test_the_indexers_letters_go_to_its_groups_topic_and_count_under_its_group():
    assert "search-indexer" in DEAD_LETTER_GROUPS
    message = Message(topic="t.postings", partition=2, offset=7, key=b"p1", value=b"\xc3\x01junk")
    before = letters_of("search-indexer")

    letter = dead_letter(Topics("t"), "search-indexer", message, "unreadable", posting_id="p1")

    assert (letter.topic, letter.key, letter.value) == ("t.search-indexer.dlq", b"p1", b"\xc3\x01junk")
    headers = dict(letter.headers or [])
    assert headers["jobpost.source_topic"] == b"t.postings"
    assert (headers["jobpost.source_partition"], headers["jobpost.source_offset"]) == (b"2", b"7")
    assert letters_of("search-indexer") == before + 1


def letters_of(group: str) -> float:
    return REGISTRY.get_sample_value("jobpost_dead_letters_total", {"group": group}) or 0.0
