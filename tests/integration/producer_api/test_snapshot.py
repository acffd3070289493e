"""A new replica copies a live one's stores, then reads only what came since from Kafka:
every read guarantee holds from its first answer (no false 404, deletes are 410, a strong
read sees every write committed before it). The copy is served on the live replica's
internal port only, over TLS here, to a credential with the scope `ops:snapshot`, checked
against its manifest before it is used, and audited."""

import hashlib
import json
import re

import httpx
from confluent_kafka import Message

from jobpost_dev.processes import running
from jobpost_dev.stack.tls import CertificateAuthority
from runtime.replay import replay
from schemas import codec
from schemas.audit import AuditAction
from schemas.topics import Topics
from tests import postings
from tests.processes import SplitApi, running_api, wait_until

POSTING = postings.body(4, title="Harbour Pilot", notes="")
TOKEN = "snapshot-dev-token"
GRANTS = {"snapshotter": ["ops:snapshot"], "operator": ["ops", "postings:read"]}


def restored(api, store: str) -> float:
    text = httpx.get(f"{api.url}/metrics", timeout=5).text
    found = re.search(rf'^jobpost_state_restored_records_total\{{store="{store}"\}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def credentials(folder) -> tuple[str, dict[str, str]]:
    tokens = {name: f"{name}-{hashlib.sha256(str(folder).encode()).hexdigest()[:16]}" for name in GRANTS}
    entries = [
        {
            "name": n,
            "token_sha256": hashlib.sha256(t.encode()).hexdigest(),
            "employer": "ops",
            "scopes": GRANTS[n],
        }
        for n, t in tokens.items()
    ]
    path = folder / "credentials.json"
    path.write_text(json.dumps({"credentials": entries}))
    return str(path), tokens


def snapshots_audited(kafka) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []

    def take(message: Message) -> None:
        event = codec.audit_events().decode(message.value() or b"")
        if event.action == AuditAction.SNAPSHOT:
            found.append((event.actor, event.detail or ""))

    replay(kafka, Topics(kafka.topic_prefix).audit, range(kafka.partitions), take)
    return found


def test_a_new_replica_starts_from_a_live_ones_stores_copied_over_tls(kafka, elasticsearch_url, tmp_path):
    ca = CertificateAuthority.create(tmp_path / "ca", "replicas test CA")
    issued = ca.issue("api", ["127.0.0.1"])
    path, tokens = credentials(tmp_path)
    live = SplitApi(
        kafka,
        TOKEN,
        elasticsearch_url,
        tls=(str(issued.certificate), str(issued.key)),
        ca=str(ca.certificate),
        JOBPOST_API_CREDENTIALS_FILE=path,
    )
    with running(live) as api, httpx.Client(headers=api.headers, verify=api.verify, timeout=15) as http:
        ids = []
        for n in range(30):
            created = http.post(f"{api.url}/postings", json={**POSTING, "title": f"Pilot {n}"})
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        assert http.delete(f"{api.url}/postings/{ids[0]}").status_code == 200
        http.get(f"{api.url}/postings/{ids[0]}?consistency=strong")  # the view has it all

        # Every employer's postings: never on the public port, and only to its own scope.
        assert http.get(f"{api.url}/ops/snapshot").status_code == 404
        internal = f"{api.internal_url}/ops/snapshot"
        assert httpx.get(internal, verify=api.verify).status_code == 401
        operator = {"Authorization": f"Bearer {tokens['operator']}"}
        assert httpx.get(internal, headers=operator, verify=api.verify).status_code == 403

        with running_api(
            kafka,
            TOKEN,
            elasticsearch_url,
            JOBPOST_API_SNAPSHOT_PEERS=api.internal_url,
            JOBPOST_API_SNAPSHOT_CA_BUNDLE=str(ca.certificate),
            JOBPOST_API_SNAPSHOT_TOKEN=tokens["snapshotter"],
        ) as new:
            copied = re.search(r"copied (\d+) stores from https://", new.log_path.read_text())
            assert copied and int(copied.group(1)) >= 6, "the stores copied over TLS"  # 3 view, 3 sequencer
            assert restored(new, "postings-view") < 30  # it read what came after the copy, not the log
            assert restored(new, "sequencer") < 30
            read = [httpx.get(f"{new.url}/postings/{i}", headers=new.headers) for i in ids]
            assert read[0].status_code == 410
            assert [r.json()["title"] for r in read[1:]] == [f"Pilot {n}" for n in range(1, 30)]
            assert httpx.get(f"{new.url}/postings/never-made", headers=new.headers).status_code == 404

            changed = http.put(f"{api.url}/postings/{ids[5]}", json={**POSTING, "title": "Moved"})
            assert changed.status_code == 200, changed.text
            strong = httpx.get(f"{new.url}/postings/{ids[5]}?consistency=strong", headers=new.headers)
            assert (strong.json()["title"], strong.json()["version"]) == ("Moved", 1)
            through_new = httpx.put(
                f"{new.url}/postings/{ids[6]}", json=POSTING, headers=new.headers, timeout=15
            )
            assert through_new.json()["version"] == 1

    wait_until(lambda: [a for a, _ in snapshots_audited(kafka)] == ["snapshotter"], 30, "the copy audited")


def test_without_an_internal_port_no_snapshot_is_served(api):
    assert httpx.get(f"{api.url}/ops/snapshot", headers=api.headers).status_code == 404
