"""Who may do what, whose posting it is, what is kept: one API process with a credentials
file and an OIDC issuer (a JWKS served from this test), the indexer, real Kafka and the
real search server.

Credentials: `ats-acme` and `ats-globex` (read and write, employers acme and globex),
`reader-acme` (read only), `operator` (read and ops, employer ops), `burst` (read, for
the rate limit).
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import jwt
import pytest
from confluent_kafka import Message
from cryptography.hazmat.primitives.asymmetric import rsa

from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.replay import replay
from runtime.topics import delete_topics, ensure_topics
from schemas import codec
from schemas.audit import AuditAction, AuditEvent
from schemas.dead_letters import DeadLetterHeaders
from schemas.model import Op, Posting, PostingUpdate
from schemas.topics import Topics
from tests.client import ApiClient
from tests.processes import ApiProcess, Process, kafka_env, versions_of, wait_until
from tests.servers import one_broker

DEV_TOKEN = "security-dev-token"
TOKENS = {
    name: f"{name}-{uuid.uuid4().hex}"
    for name in ("ats-acme", "ats-globex", "reader-acme", "operator", "burst")
}
GRANTS = {
    "ats-acme": ("acme", ["postings:read", "postings:write"]),
    "ats-globex": ("globex", ["postings:read", "postings:write"]),
    "reader-acme": ("acme", ["postings:read"]),
    "operator": ("ops", ["postings:read", "ops"]),
    "burst": ("acme", ["postings:read"]),
}
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ISSUER, AUDIENCE = "https://idp.test", "jobpost-api"


def credentials_document(names: list[str]) -> str:
    entries = [
        {
            "name": n,
            "token_sha256": hashlib.sha256(TOKENS[n].encode()).hexdigest(),
            "employer": GRANTS[n][0],
            "scopes": GRANTS[n][1],
        }
        for n in names
    ]
    return json.dumps({"credentials": entries})


class Jwks(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        key = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key())) | {"kid": "k1", "use": "sig"}
        body = json.dumps({"keys": [key]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class System:
    kafka: KafkaSettings
    api: ApiProcess
    credentials: Path
    elasticsearch_url: str
    alias: str

    def client(self, name: str | None = None, token: str | None = None) -> ApiClient:
        return ApiClient(self.api.url, token or (TOKENS[name] if name else DEV_TOKEN))


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str, elasticsearch_url: str, tmp_path_factory) -> Iterator[System]:
    prefix = f"t{uuid.uuid4().hex[:10]}"
    kafka = one_broker(kafka_bootstrap, prefix, 3)
    ensure_topics(kafka)
    alias = f"{prefix}-postings"
    credentials = tmp_path_factory.mktemp("credentials") / "credentials.json"
    credentials.write_text(credentials_document(list(TOKENS)))
    jwks = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    threading.Thread(target=jwks.serve_forever, daemon=True).start()
    indexer = Process(
        "indexer",
        ["indexer"],
        {
            **kafka_env(kafka),
            "JOBPOST_INDEXER_ELASTICSEARCH_URL": elasticsearch_url,
            "JOBPOST_INDEXER_ALIAS": alias,
        },
    )
    api = ApiProcess(
        kafka, DEV_TOKEN, elasticsearch_url,
        JOBPOST_API_SEARCH_ALIAS=alias,
        JOBPOST_API_CREDENTIALS_FILE=str(credentials),
        JOBPOST_API_CREDENTIALS_CHECK_S="0.2",
        JOBPOST_API_OIDC_JWKS_URL=f"http://127.0.0.1:{jwks.server_port}/jwks",
        JOBPOST_API_OIDC_ISSUER=ISSUER,
        JOBPOST_API_OIDC_AUDIENCE=AUDIENCE,
        JOBPOST_API_RATE_LIMIT="60/second",
    )  # fmt: skip
    try:
        api.wait_ready()
        yield System(kafka, api, credentials, elasticsearch_url, alias)
    finally:
        api.stop()
        indexer.stop()
        jwks.shutdown()
        httpx.delete(f"{elasticsearch_url}/{prefix}-*", params={"allow_no_indices": "true"}, timeout=30)
        delete_topics(kafka)


def test_a_read_only_credential_reads_and_writes_nothing(system):
    owner, reader = system.client("ats-acme"), system.client("reader-acme")
    posting = owner.create(title="Read only")
    before = versions_of(system.kafka, Topics(system.kafka.topic_prefix).postings, posting["id"])

    assert reader.get(posting["id"])["title"] == "Read only"
    for refused in (
        reader.create(title="Nope", expect=403),
        reader.replace(posting["id"], title="Nope", expect=403),
        reader.delete(posting["id"], expect=403),
    ):
        assert "postings:write" in refused["detail"]

    assert reader.request("GET", "/ops/lag", expect=403)["status"] == 403
    assert owner.get(posting["id"], strong=True)["version"] == 0
    assert (
        versions_of(system.kafka, Topics(system.kafka.topic_prefix).postings, posting["id"]) == before == [0]
    )


def test_another_employers_posting_does_not_exist_on_any_route_and_an_operator_sees_both(system):
    acme, globex, operator = system.client("ats-acme"), system.client("ats-globex"), system.client("operator")
    word = f"w{uuid.uuid4().hex[:8]}"
    ours = acme.create(title=f"Acme {word} engineer")
    theirs = globex.create(title=f"Globex {word} engineer")
    assert (ours["employer"], theirs["employer"]) == ("acme", "globex")

    # Every route of another employer's posting answers as if it did not exist, writes included.
    pid = theirs["id"]
    acme.get(pid, expect=404)
    acme.get(pid, strong=True, expect=404)
    acme.deliveries(pid, expect=404)
    acme.timeline(pid, expect=404)
    acme.replace(pid, title="Taken over", expect=404)
    acme.replace(pid, title="Taken over", if_match=0, expect=404)  # no 412: its version is not told
    acme.delete(pid, expect=404)
    assert globex.get(pid, strong=True)["version"] == 0  # nothing was written

    def found(client: ApiClient) -> set[str] | None:
        page = client.search(word, expect=(200, 503))
        return {item["id"] for item in page["items"]} if page.status_code == 200 else None

    assert wait_until(lambda: found(operator) == {ours["id"], pid}, 30, "both postings indexed")
    assert found(acme) == {ours["id"]}
    assert found(globex) == {pid}
    assert (
        operator.get(pid)["employer"] == "globex"
        and operator.timeline(ours["id"])["posting_id"] == ours["id"]
    )

    # A deleted posting is gone for its owner, and still does not exist for anyone else.
    globex.delete(pid)
    assert globex.get(pid, expect=410)["status"] == 410
    acme.get(pid, expect=404)
    acme.get(pid, strong=True, expect=404)
    acme.timeline(pid, expect=404)


def test_idempotency_keys_of_two_employers_never_meet(system):
    acme, globex = system.client("ats-acme"), system.client("ats-globex")
    a = acme.create(key="shared-key", title="Acme's")
    b = globex.create(key="shared-key", title="Globex's")
    assert a["id"] != b["id"] and (a["title"], b["title"]) == ("Acme's", "Globex's")
    assert acme.create(key="shared-key", title="Acme's")["id"] == a["id"]  # a retry finds its own


def test_a_token_removed_from_the_file_is_refused_within_seconds(system):
    names = [n for n in TOKENS if n != "reader-acme"]
    reader = system.client("reader-acme")
    reader.search("anything")
    try:
        system.credentials.write_text(credentials_document(names))
        started = time.monotonic()
        wait_until(
            lambda: reader.search("anything", expect=(200, 401)).status_code == 401, 5, "the token refused"
        )
        assert time.monotonic() - started < 5
        system.client("ats-acme").search("anything")  # the others go on
    finally:
        system.credentials.write_text(credentials_document(list(TOKENS)))
        os.utime(system.credentials)
    wait_until(lambda: reader.search("anything", expect=(200, 401)).status_code == 200, 5, "the token back")


def bearer(key: rsa.RSAPrivateKey = KEY, **claims: object) -> str:
    """A token of the test's issuer for this API, read-only for acme unless `claims` say else."""
    body = {"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 300, "sub": "svc-acme",
            "employer": "acme", "scope": "openid postings:read"} | claims  # fmt: skip
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})


def test_a_jwt_of_the_issuer_is_accepted_with_its_scopes_and_a_bad_one_is_401(system):
    posting = system.client("ats-acme").create(title="Seen through OIDC")
    reader = system.client(token=bearer())
    assert reader.get(posting["id"])["title"] == "Seen through OIDC"
    assert "postings:write" in reader.replace(posting["id"], title="x", expect=403)["detail"]
    other = system.client(token=bearer(employer="globex", sub="svc-globex"))
    other.get(posting["id"], expect=404)

    wrong_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for refused in (
        bearer(exp=int(time.time()) - 120),
        bearer(aud="another-api"),
        bearer(key=wrong_key),
        bearer(iss="https://another.idp"),
    ):
        answer = system.client(token=refused).get(posting["id"], expect=401)
        assert answer["status"] == 401


def test_a_credential_over_its_rate_is_answered_429_with_retry_after(system):
    burst = system.client("burst")

    def ask(_: int) -> httpx.Response:
        return burst.http.get("/postings/no-such-posting")

    with ThreadPoolExecutor(6) as pool:  # 150 cheap requests, far over 60 a second
        answers = list(pool.map(ask, range(150)))
    statuses = {answer.status_code for answer in answers}
    assert statuses == {404, 429}
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert 1 <= int(refused.headers["Retry-After"]) <= 2
    assert refused.headers["Content-Type"] == "application/problem+json"
    # Another credential has its own rate: asked while this one is refused (the burst can
    # take over a second on a busy machine, so its window is filled again first).
    assert any(burst.http.get("/postings/no-such-posting").status_code == 429 for _ in range(1000))
    system.client("reader-acme").get("no-such-posting", expect=404)


def dead_letter(kafka: KafkaSettings, update: PostingUpdate) -> None:
    """A LinkedIn dead letter for `update`, as the consumer writes one."""
    headers = DeadLetterHeaders("HTTP 400: rejected", Topics(kafka.topic_prefix).postings, 0, 0, 1, 1, 1)
    producer = KafkaClients(kafka).producer()
    producer.produce(Topics(kafka.topic_prefix).dlq("linkedin"), codec.posting_updates().encode(update),
                     update.posting_id.encode(), headers=headers.to_headers())  # fmt: skip
    assert producer.flush(10) == 0


def audit_events(kafka: KafkaSettings) -> list[AuditEvent]:
    found: list[AuditEvent] = []

    def take(message: Message) -> None:
        found.append(codec.audit_events().decode(message.value() or b""))

    replay(kafka, Topics(kafka.topic_prefix).audit, range(kafka.partitions), take)
    return found


def test_every_accepted_write_and_redrive_is_in_the_audit_stream(system):
    acme, operator, dev = system.client("ats-acme"), system.client("operator"), system.client()
    created = acme.create(title="Audited")
    replaced = acme.replace(created["id"], title="Audited again")
    deleted = acme.delete(created["id"])
    by_dev = dev.create(title="By a development token")
    acme.replace(by_dev["id"], title="Refused: not acme's", expect=404)  # refused: not audited
    letter = PostingUpdate(
        by_dev["id"], 0, Op.CREATED, f"{by_dev['id']}:0", "r", Posting("Audited", ""), 1, 1
    )
    dead_letter(system.kafka, letter)

    def listed() -> bool:
        letters = operator.request("GET", "/ops/dead-letters/linkedin", expect=200)["letters"]
        return any(x["posting_id"] == by_dev["id"] for x in letters)

    wait_until(listed, 30, "the letter in the index")
    operator.request("POST", "/ops/dead-letters/linkedin/redrive", json={}, expect=(200, 202))

    expected = {
        ("ats-acme", AuditAction.CREATE, created["id"], 0),
        ("ats-acme", AuditAction.REPLACE, created["id"], replaced["version"]),
        ("ats-acme", AuditAction.DELETE, created["id"], deleted["version"]),
        ("dev-token-1", AuditAction.CREATE, by_dev["id"], 0),
        ("operator", AuditAction.REDRIVE, by_dev["id"], 0),
    }

    def recorded() -> set[tuple[str, AuditAction, str | None, int | None]]:
        return {(e.actor, e.action, e.posting_id, e.version) for e in audit_events(system.kafka)}

    wait_until(lambda: expected <= recorded(), 30, "the audit events")
    assert not any(e[2] == by_dev["id"] and e[0] == "ats-acme" for e in recorded())


def test_a_deleted_posting_keeps_no_text_in_search_or_its_timeline(system):
    acme = system.client("ats-acme")
    word = f"secret{uuid.uuid4().hex[:8]}"
    posting = acme.create(title=f"Top {word} role", description=f"The {word} details", notes=word)
    acme.replace(posting["id"], title=f"Top {word} role, senior", description=f"More {word}")

    def document() -> dict | None:
        answer = httpx.get(f"{system.elasticsearch_url}/{system.alias}/_doc/{posting['id']}", timeout=10)
        return answer.json().get("_source") if answer.status_code == 200 else None

    wait_until(lambda: (document() or {}).get("version") == 1, 30, "the posting indexed")
    assert word in json.dumps(document())
    acme.delete(posting["id"])

    wait_until(lambda: (document() or {}).get("status") == "deleted", 30, "the delete indexed")
    assert document() == {"id": posting["id"], "version": 2, "status": "deleted", "employer": "acme"}

    def lines() -> list[dict]:
        return list(acme.timeline(posting["id"])["versions"])

    wait_until(
        lambda: [line["op"] for line in lines()] == ["CREATED", "UPDATED", "DELETED"], 30, "the delete read"
    )
    assert [line["title"] for line in lines()] == ["", "", ""]
    assert word not in acme.http.get(f"/postings/{posting['id']}/timeline").text


def test_the_playground_and_the_docs_carry_the_security_headers(system):
    for path in ("/ui/", "/ui/app.js", "/docs", "/redoc"):
        answer = httpx.get(f"{system.api.url}{path}", timeout=10)
        assert answer.status_code == 200
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
        assert "script-src 'self';" in answer.headers["Content-Security-Policy"]
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
        assert answer.headers["Referrer-Policy"] == "no-referrer"
    readiness = httpx.get(f"{system.api.url}/readyz", timeout=10)
    assert readiness.status_code == 200  # no token needed
