"""/readyz per capability, on a real replica: with its search server gone, the replica says
search is not ready and everything else is, and does what it says: it takes writes and
serves reads, while `/readyz` without `for` (everything) answers 503 and names why."""

import httpx

from tests import postings
from tests.processes import free_port, running_api, wait_until

TOKEN = "readiness-token"


def readyz(api, asked: str | None = None) -> httpx.Response:
    return httpx.get(f"{api.url}/readyz", params={} if asked is None else {"for": asked}, timeout=5)


def test_a_replica_without_its_search_server_is_ready_for_writes_and_reads_not_search(kafka, topics):
    nowhere = f"http://127.0.0.1:{free_port()}"  # no search server listens there
    with running_api(kafka, TOKEN, nowhere) as api:
        wait_until(lambda: readyz(api, "reads").status_code == 200, 60, "reads ready")
        for asked in ("writes", "reads", "writes,reads"):
            assert readyz(api, asked).status_code == 200, asked
        for asked in (None, "search", "writes,search"):
            answer = readyz(api, asked)
            assert answer.status_code == 503, asked
            assert answer.json()["status"] == "not ready"
        body = readyz(api).json()
        assert body["capabilities"] == {"writes": True, "reads": True, "search": False}
        assert body["checks"] == {"kafka": True, "sequencer": True, "elasticsearch": False}
        assert set(body["reasons"]) == {"search", "elasticsearch"}
        assert "Traceback" not in readyz(api).text

        # What it says it can serve, it serves.
        created = api.client.create(**postings.body(3))

        def readable() -> bool:
            return httpx.get(f"{api.url}/postings/{created['id']}", headers=api.headers).status_code == 200

        wait_until(readable, 30, "the new posting readable")
        unknown = readyz(api, "writes,everything")
        assert unknown.status_code == 422
        assert unknown.headers["content-type"].startswith("application/problem+json")
