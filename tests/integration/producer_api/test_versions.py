"""One writer per posting: versions are unique, gapless and in order, whoever sends them."""

import asyncio
import itertools
import uuid

import httpx

from tests.processes import ApiProcess, read_postings, versions_of

WRITES_PER_CLIENT = 60
POSTING = {"title": "Stream Processing Engineer", "description": "Kafka, Python", "notes": ""}


def create(api: ApiProcess, **headers: str) -> dict:
    response = httpx.post(f"{api.url}/postings", json=POSTING, headers={**api.headers, **headers}, timeout=15)
    assert response.status_code == 201, response.text
    return response.json()


async def replace_concurrently(
    apis: list[ApiProcess], posting_id: str, total: int, clients: int
) -> list[int]:
    """`clients` concurrent clients send `total` replacements, spread round-robin over `apis`."""
    jobs = iter(range(total))
    versions: list[int] = []

    async def client(number: int) -> None:
        async with httpx.AsyncClient(timeout=20) as http:
            for job in jobs:
                api = apis[(number + job) % len(apis)]
                body = {**POSTING, "title": f"Engineer, edit {job}"}
                response = await http.put(f"{api.url}/postings/{posting_id}", json=body, headers=api.headers)
                assert response.status_code == 200, response.text
                versions.append(response.json()["version"])

    await asyncio.gather(*(client(n) for n in range(clients)))
    return versions


def test_concurrent_replacements_get_versions_1_to_50_each_once(api, kafka, topics):
    posting = create(api)
    assert posting["version"] == 0

    versions = asyncio.run(replace_concurrently([api], posting["id"], total=50, clients=10))

    assert sorted(versions) == list(range(1, 51))
    assert versions_of(kafka, topics.postings, posting["id"]) == list(range(0, 51))


def test_two_api_processes_share_one_gapless_sequence(api, second_api, kafka, topics):
    posting = create(api)

    versions = asyncio.run(replace_concurrently([api, second_api], posting["id"], total=50, clients=10))

    assert sorted(versions) == list(range(1, 51))
    assert versions_of(kafka, topics.postings, posting["id"]) == list(range(0, 51))


def test_strong_read_through_another_process_sees_the_write(api, second_api):
    posting = create(api)
    for edit in range(5):
        body = {**POSTING, "title": f"edit {edit}"}
        written = httpx.put(f"{api.url}/postings/{posting['id']}", json=body, headers=api.headers, timeout=15)
        assert written.status_code == 200

        read = httpx.get(
            f"{second_api.url}/postings/{posting['id']}",
            params={"consistency": "strong"},
            headers=second_api.headers,
            timeout=15,
        )

        assert read.status_code == 200, read.text
        assert read.json()["version"] == written.json()["version"]
        assert read.json()["title"] == f"edit {edit}"
        assert read.headers["ETag"] == f'"{edit + 1}"'


def test_create_with_the_same_idempotency_key_returns_the_same_posting(api, kafka, topics):
    key = f"create-{uuid.uuid4()}"
    first = create(api, **{"Idempotency-Key": key})
    again = create(api, **{"Idempotency-Key": key})

    assert again == first
    records = [r for r in read_postings(kafka, topics.postings) if r[0] == first["id"]]
    assert len(records) == 1


def test_replace_retried_with_its_key_is_applied_once(api, kafka, topics):
    posting = create(api)
    url = f"{api.url}/postings/{posting['id']}"
    headers = {**api.headers, "Idempotency-Key": "edit-1"}

    first = httpx.put(url, json={**POSTING, "title": "v1"}, headers=headers, timeout=15)
    retry = httpx.put(url, json={**POSTING, "title": "v1"}, headers=headers, timeout=15)

    assert first.status_code == retry.status_code == 200
    assert retry.json()["version"] == first.json()["version"] == 1
    assert versions_of(kafka, topics.postings, posting["id"]) == [0, 1]


def test_delete_writes_a_deleted_version_then_a_tombstone(api, kafka, topics):
    posting = create(api)
    deleted = httpx.delete(f"{api.url}/postings/{posting['id']}", headers=api.headers, timeout=15)

    assert deleted.status_code == 200
    assert deleted.json() == {"id": posting["id"], "version": 1, "status": "deleted"}
    records = [
        (value and (value.version, value.op))
        for key, _, value in read_postings(kafka, topics.postings)
        if key == posting["id"]
    ]
    assert records == [(0, "CREATED"), (1, "DELETED"), None]


def test_a_crashed_sequencer_member_loses_nothing_and_duplicates_nothing(api, second_api, kafka, topics):
    """kill -9 of one of two API processes (each a sequencer member) in the middle of a load.
    Clients that got a 503 or 504 or lost their connection retry on the survivor with the same key."""
    postings = [create(api)["id"] for _ in range(6)]
    acknowledged: dict[str, int] = {}  # request key -> version of a 2xx answer
    counter = itertools.count()

    async def client(number: int) -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            for _ in range(WRITES_PER_CLIENT):
                key = f"load-{number}-{next(counter)}"
                posting_id = postings[number % len(postings)]
                targets = [api, second_api] if number % 2 else [second_api, api]
                attempt = 0
                while True:
                    assert attempt < 50, f"{key} was never acknowledged"
                    target = targets[0] if attempt == 0 else second_api
                    attempt += 1
                    try:
                        response = await http.put(
                            f"{target.url}/postings/{posting_id}",
                            json={**POSTING, "title": key},
                            headers={**target.headers, "Idempotency-Key": key},
                        )
                    except httpx.TransportError:
                        continue  # the process died under us: retry on the survivor
                    if response.status_code in (
                        503,
                        504,
                    ):  # not applied / unknown: the key makes a retry safe
                        continue
                    assert response.status_code == 200, response.text
                    acknowledged[key] = response.json()["version"]
                    break

    async def load_and_crash() -> None:
        load = asyncio.gather(*(client(n) for n in range(8)))
        while len(acknowledged) < 80:  # well into the load, far from its end
            await asyncio.sleep(0.01)
        api.kill()
        await load

    asyncio.run(load_and_crash())

    assert len(acknowledged) == 8 * WRITES_PER_CLIENT
    records = [(k, v) for k, _, v in read_postings(kafka, topics.postings) if v is not None]
    for posting_id in postings:
        versions = [v.version for k, v in records if k == posting_id]
        assert versions == list(range(len(versions))), f"gap or duplicate for {posting_id}: {versions}"
    written = {v.request_id: v.version for k, v in records if v.request_id.startswith("load-")}
    assert len(written) == len([v for k, v in records if v.request_id.startswith("load-")])  # no key twice
    assert written == acknowledged


def test_view_of_a_new_process_restores_every_posting(api, kafka, elasticsearch_url):
    created = [create(api)["id"] for _ in range(5)]
    httpx.delete(f"{api.url}/postings/{created[0]}", headers=api.headers, timeout=15)

    late = ApiProcess(kafka, api.token, elasticsearch_url)
    try:
        late.wait_ready()
        statuses = [httpx.get(f"{late.url}/postings/{i}", headers=late.headers).status_code for i in created]
        assert statuses == [410, 200, 200, 200, 200]
    finally:
        late.stop()
