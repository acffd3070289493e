"""Idempotency-Key as the IETF draft has it, and replies matched to their own request."""

import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.processes import read_postings, versions_of


def test_two_postings_sharing_a_key_each_get_their_own_write(api, kafka, topics):
    client = api.client
    a, b = (client.create(title=title)["id"] for title in ("Posting A", "Posting B"))

    with ThreadPoolExecutor(2) as pool:
        for n in range(20):
            key = f"update-{n}"
            on_a, on_b = pool.map(
                lambda posting_id, title, key=key: client.replace(posting_id, key=key, title=title),
                (a, b),
                (f"A {n}", f"B {n}"),
            )
            assert (on_a["title"], on_b["title"]) == (f"A {n}", f"B {n}")
            read_a, read_b = pool.map(client.get, (a, b))
            assert (read_a["title"], read_b["title"]) == (f"A {n}", f"B {n}")

    assert versions_of(kafka, topics.postings, a) == list(range(21))
    assert versions_of(kafka, topics.postings, b) == list(range(21))


def test_a_key_reused_with_another_body_or_method_is_refused_and_writes_nothing(api, kafka, topics):
    client = api.client
    posting_id = client.create(title="Reused")["id"]
    first = client.replace(posting_id, key="edit-once", title="Reused v1")

    again = client.replace(posting_id, key="edit-once", title="Reused v1")
    other_body = client.replace(posting_id, key="edit-once", title="Something else", expect=422)
    other_method = client.delete(posting_id, key="edit-once", expect=422)

    assert again == first and again["version"] == 1
    for refused in (other_body, other_method):
        assert refused["type"].endswith("/idempotency-key-reused")
    assert versions_of(kafka, topics.postings, posting_id) == [0, 1]
    assert client.get(posting_id)["title"] == "Reused v1"


def test_a_retried_create_returns_the_same_posting_and_a_reused_create_key_is_refused(api, kafka, topics):
    client = api.client
    key = f"create-{uuid.uuid4()}"
    first = client.create(key=key, title="Original")
    retry = client.create(key=key, title="Original")
    hijack = client.create(key=key, title="Another client's posting", expect=422)

    assert retry == first  # the same posting, at the same place (the client checks Location)
    assert hijack["type"].endswith("/idempotency-key-reused")
    records = [r for r in read_postings(kafka, topics.postings) if r[0] == first["id"]]
    assert [r[2].posting.title for r in records if r[2] is not None] == ["Original"]


def test_keys_must_be_1_to_255_printable_ascii_characters(api, kafka, topics):
    client = api.client
    posting_id = client.create(title="Keys")["id"]
    for n, good in enumerate(("a", "x" * 255, "spaces are printable"), start=1):
        first = client.replace(posting_id, key=good, title=f"Keys v{n}")
        again = client.replace(posting_id, key=good, title=f"Keys v{n}")  # honoured: no new version
        assert (first["version"], again) == (n, first)
    for bad in ("x" * 256, "tab\there"):
        problem = client.replace(posting_id, key=bad, title="Keys refused", expect=422)
        where = [[str(part).lower() for part in e["loc"]] for e in problem["errors"]]
        assert ["header", "idempotency-key"] in where, problem
    assert versions_of(kafka, topics.postings, posting_id) == [0, 1, 2, 3]
    assert client.get(posting_id)["title"] == "Keys v3"
