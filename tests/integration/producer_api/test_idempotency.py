"""Idempotency-Key as the IETF draft has it, and replies matched to their own request."""

import asyncio
import uuid

import httpx

from tests.processes import ApiProcess, read_postings, versions_of

POSTING = {"title": "Warehouse Lead", "description": "Forklifts", "notes": ""}


def create(api: ApiProcess, title: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{api.url}/postings",
        json={**POSTING, "title": title},
        headers={**api.headers, **headers},
        timeout=15,
    )


def test_two_postings_sharing_a_key_each_get_their_own_write(api, kafka, topics):
    a, b = (create(api, title).json()["id"] for title in ("Posting A", "Posting B"))

    async def rounds() -> None:
        async with httpx.AsyncClient(headers=api.headers, timeout=15) as http:
            for n in range(20):
                key = {"Idempotency-Key": f"update-{n}"}
                on_a, on_b = await asyncio.gather(
                    http.put(f"{api.url}/postings/{a}", json={**POSTING, "title": f"A {n}"}, headers=key),
                    http.put(f"{api.url}/postings/{b}", json={**POSTING, "title": f"B {n}"}, headers=key),
                )
                assert (on_a.status_code, on_b.status_code) == (200, 200), (on_a.text, on_b.text)
                assert (on_a.json()["title"], on_b.json()["title"]) == (f"A {n}", f"B {n}")
                read_a, read_b = await asyncio.gather(
                    http.get(f"{api.url}/postings/{a}"), http.get(f"{api.url}/postings/{b}")
                )
                assert (read_a.json()["title"], read_b.json()["title"]) == (f"A {n}", f"B {n}")

    asyncio.run(rounds())
    assert versions_of(kafka, topics.postings, a) == list(range(21))
    assert versions_of(kafka, topics.postings, b) == list(range(21))


def test_a_key_reused_with_another_body_or_method_is_refused_and_writes_nothing(api, kafka, topics):
    posting = create(api, "Reused").json()
    item = f"{api.url}/postings/{posting['id']}"
    key = {**api.headers, "Idempotency-Key": "edit-once"}
    first = httpx.put(item, json={**POSTING, "title": "Reused v1"}, headers=key, timeout=15)
    assert first.status_code == 200

    again = httpx.put(item, json={**POSTING, "title": "Reused v1"}, headers=key, timeout=15)
    other_body = httpx.put(item, json={**POSTING, "title": "Something else"}, headers=key, timeout=15)
    other_method = httpx.delete(item, headers=key, timeout=15)

    assert (again.status_code, again.json(), again.headers["ETag"]) == (200, first.json(), '"1"')
    for refused in (other_body, other_method):
        assert refused.status_code == 422, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        assert refused.json()["type"].endswith("/idempotency-key-reused")
    assert versions_of(kafka, topics.postings, posting["id"]) == [0, 1]
    assert httpx.get(item, headers=api.headers).json()["title"] == "Reused v1"


def test_a_retried_create_returns_the_same_posting_and_a_reused_create_key_is_refused(api, kafka, topics):
    key = {"Idempotency-Key": f"create-{uuid.uuid4()}"}
    first = create(api, "Original", **key)
    retry = create(api, "Original", **key)
    hijack = create(api, "Another client's posting", **key)

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json() and retry.headers["Location"] == first.headers["Location"]
    assert hijack.status_code == 422 and hijack.json()["type"].endswith("/idempotency-key-reused")
    records = [r for r in read_postings(kafka, topics.postings) if r[0] == first.json()["id"]]
    assert [r[2].posting.title for r in records if r[2] is not None] == ["Original"]


def test_keys_must_be_1_to_255_printable_ascii_characters(api):
    posting = create(api, "Keys").json()
    item = f"{api.url}/postings/{posting['id']}"
    for good in ("a", "x" * 255, "spaces are printable"):
        response = httpx.put(item, json=POSTING, headers={**api.headers, "Idempotency-Key": good}, timeout=15)
        assert response.status_code == 200, (good, response.text)
    for bad in ("x" * 256, "tab\there"):
        response = httpx.put(item, json=POSTING, headers={**api.headers, "Idempotency-Key": bad}, timeout=15)
        assert response.status_code == 422, bad
        assert response.headers["content-type"] == "application/problem+json"
