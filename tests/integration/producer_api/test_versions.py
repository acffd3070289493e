"""One writer per posting: versions are unique, gapless and in order, whoever sends them."""

import itertools
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests import postings
from tests.processes import ApiProcess, read_postings, versions_of

WRITES_PER_CLIENT = 60
POSTING = postings.body(6, title="Stream Processing Engineer")


def replace_concurrently(apis: list[ApiProcess], posting_id: str, total: int, clients: int) -> list[int]:
    """`clients` concurrent clients send `total` replacements, spread round-robin over `apis`."""
    jobs = iter(range(total))
    taking = threading.Lock()
    versions: list[int] = []

    def client(number: int) -> None:
        while True:
            with taking:
                job = next(jobs, None)
            if job is None:
                return
            api = apis[(number + job) % len(apis)]
            versions.append(api.client.replace(posting_id, title=f"Engineer, edit {job}")["version"])

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    return versions


def test_concurrent_replacements_get_versions_1_to_50_each_once(api, kafka, topics):
    posting = api.client.create(**POSTING)
    assert posting["version"] == 0

    versions = replace_concurrently([api], posting["id"], total=50, clients=10)

    assert sorted(versions) == list(range(1, 51))
    assert versions_of(kafka, topics.postings, posting["id"]) == list(range(0, 51))


def test_two_api_processes_share_one_gapless_sequence(api, second_api, kafka, topics):
    posting = api.client.create(**POSTING)

    versions = replace_concurrently([api, second_api], posting["id"], total=50, clients=10)

    assert sorted(versions) == list(range(1, 51))
    assert versions_of(kafka, topics.postings, posting["id"]) == list(range(0, 51))


def test_strong_read_through_another_process_sees_the_write(api, second_api):
    posting_id = api.client.create(**POSTING)["id"]
    for edit in range(5):
        written = api.client.replace(posting_id, title=f"edit {edit}")

        read = second_api.client.get(posting_id, strong=True)  # the client checks its ETag too

        assert written["version"] == edit + 1
        assert (read["version"], read["title"]) == (edit + 1, f"edit {edit}")


def test_create_with_the_same_idempotency_key_returns_the_same_posting(api, kafka, topics):
    key = f"create-{uuid.uuid4()}"
    first = api.client.create(key=key, **POSTING)
    again = api.client.create(key=key, **POSTING)

    assert again == first
    records = [r for r in read_postings(kafka, topics.postings) if r[0] == first["id"]]
    assert len(records) == 1


def test_replace_retried_with_its_key_is_applied_once(api, kafka, topics):
    posting_id = api.client.create(**POSTING)["id"]

    first = api.client.replace(posting_id, key="edit-1", title="v1")
    retry = api.client.replace(posting_id, key="edit-1", title="v1")

    assert retry["version"] == first["version"] == 1
    assert versions_of(kafka, topics.postings, posting_id) == [0, 1]


def test_delete_writes_a_deleted_version_then_a_tombstone(api, kafka, topics):
    posting_id = api.client.create(**POSTING)["id"]

    assert api.client.delete(posting_id) == {"id": posting_id, "version": 1, "status": "deleted"}
    records = [
        (value and (value.version, value.op))
        for key, _, value in read_postings(kafka, topics.postings)
        if key == posting_id
    ]
    assert records == [(0, "CREATED"), (1, "DELETED"), None]


def test_a_crashed_sequencer_member_loses_nothing_and_duplicates_nothing(api, second_api, kafka, topics):
    """kill -9 of one of two API processes (each a sequencer member) in the middle of a load.
    Clients that got a 503 or 504 or lost their connection retry on the survivor with the same key."""
    postings = [api.client.create(**POSTING)["id"] for _ in range(6)]
    acknowledged: dict[str, int] = {}  # request key -> version of a 2xx answer
    counter = itertools.count()

    def client(number: int) -> None:
        for _ in range(WRITES_PER_CLIENT):
            key = f"load-{number}-{next(counter)}"
            posting_id = postings[number % len(postings)]
            targets = [api, second_api] if number % 2 else [second_api, api]
            for attempt in range(50):
                target = targets[0] if attempt == 0 else second_api
                try:
                    answer = target.client.replace(posting_id, key=key, title=key, expect=(200, 503, 504))
                except httpx.TransportError:
                    continue  # the process died under us: retry on the survivor
                if answer.status_code in (503, 504):  # not applied / unknown: the key makes a retry safe
                    continue
                acknowledged[key] = answer["version"]
                break
            else:
                raise AssertionError(f"{key} was never acknowledged")

    with ThreadPoolExecutor(8) as pool:
        load = [pool.submit(client, n) for n in range(8)]
        deadline = time.monotonic() + 120
        while len(acknowledged) < 80:  # well into the load, far from its end
            assert time.monotonic() < deadline, "the load did not get going"
            time.sleep(0.01)
        api.kill()
        for finished in load:
            finished.result()

    assert len(acknowledged) == 8 * WRITES_PER_CLIENT
    records = [(k, v) for k, _, v in read_postings(kafka, topics.postings) if v is not None]
    for posting_id in postings:
        versions = [v.version for k, v in records if k == posting_id]
        assert versions == list(range(len(versions))), f"gap or duplicate for {posting_id}: {versions}"
    written = {v.request_id: v.version for k, v in records if v.request_id.startswith("load-")}
    assert len(written) == len([v for k, v in records if v.request_id.startswith("load-")])  # no key twice
    assert written == acknowledged


def test_view_of_a_new_process_restores_every_posting(api, kafka, elasticsearch_url):
    created = [api.client.create(**POSTING)["id"] for _ in range(5)]
    api.client.delete(created[0])

    late = ApiProcess(kafka, api.token, elasticsearch_url)
    try:
        late.wait_ready()
        late.client.get(created[0], expect=410)
        assert [late.client.get(i)["version"] for i in created[1:]] == [0, 0, 0, 0]
    finally:
        late.stop()
