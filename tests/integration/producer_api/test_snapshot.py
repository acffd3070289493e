"""A new replica copies a live one's stores, then reads only what came since from Kafka:
every read guarantee holds from its first answer (no false 404, deletes are 410, a strong
read sees every write committed before it)."""

import re

import httpx

from tests import postings
from tests.processes import running_api

POSTING = postings.body(4, title="Harbour Pilot", notes="")


def restored(api, store: str) -> float:
    text = httpx.get(f"{api.url}/metrics", timeout=5).text
    found = re.search(rf'^jobpost_state_restored_records_total\{{store="{store}"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_new_replica_starts_from_a_live_ones_stores(api, kafka, elasticsearch_url):
    ids = []
    for n in range(30):
        created = httpx.post(
            f"{api.url}/postings", json={**POSTING, "title": f"Pilot {n}"}, headers=api.headers
        )
        assert created.status_code == 201, created.text
        ids.append(created.json()["id"])
    assert httpx.delete(f"{api.url}/postings/{ids[0]}", headers=api.headers).status_code == 200
    httpx.get(f"{api.url}/postings/{ids[0]}?consistency=strong", headers=api.headers)  # the view has it all

    with running_api(kafka, api.token, elasticsearch_url, JOBPOST_API_SNAPSHOT_PEERS=api.url) as new:
        assert restored(new, "postings-view") < 30  # it read what came after the copy, not the log
        assert restored(new, "sequencer") < 30
        read = [httpx.get(f"{new.url}/postings/{i}", headers=new.headers) for i in ids]
        assert read[0].status_code == 410
        assert [r.json()["title"] for r in read[1:]] == [f"Pilot {n}" for n in range(1, 30)]
        assert httpx.get(f"{new.url}/postings/never-made", headers=new.headers).status_code == 404

        changed = httpx.put(
            f"{api.url}/postings/{ids[5]}", json={**POSTING, "title": "Moved"}, headers=api.headers
        )
        assert changed.status_code == 200, changed.text
        strong = httpx.get(f"{new.url}/postings/{ids[5]}?consistency=strong", headers=new.headers)
        assert (strong.json()["title"], strong.json()["version"]) == ("Moved", 1)
        through_new = httpx.put(f"{new.url}/postings/{ids[6]}", json=POSTING, headers=new.headers, timeout=15)
        assert through_new.json()["version"] == 1


def test_a_snapshot_is_an_operators_only(api):
    assert httpx.get(f"{api.url}/ops/snapshot").status_code == 401
