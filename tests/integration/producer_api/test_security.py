"""Who may do what, whose posting it is, what is kept: one API process with a credentials
file and an OIDC issuer (a JWKS served over TLS from this test, its keys changeable), the
indexer, real Kafka and the real search server.

Credentials: `ats-acme` and `ats-globex` (read and write, employers acme and globex),
`reader-acme` (read only), `nobody` (no scope at all), `operator` (read and ops, employer
ops), `burst` (read, for the rate limit), `batcher` (write, for a batch's rate). The last
test reads the API's log for every token this module used.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import ssl
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
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from jobpost_dev.stack.tls import CertificateAuthority
from producer_api.config import ApiSettings
from producer_api.http.app import create_app
from producer_api.http.gate import every_route
from runtime.kafka import KafkaSettings
from runtime.kafka_clients import KafkaClients
from runtime.topics import delete_topics, ensure_topics
from schemas import codec
from schemas.audit import AuditAction
from schemas.dead_letters import DeadLetterHeaders
from schemas.model import Op, PostingUpdate
from schemas.topics import Topics
from tests import postings
from tests.client import ApiClient
from tests.processes import (
    ApiProcess,
    Process,
    audit_events,
    kafka_env,
    read_postings,
    versions_of,
    wait_until,
)
from tests.servers import one_broker

DEV_TOKEN = "security-dev-token"
TOKENS = {
    name: f"{name}-{uuid.uuid4().hex}"
    for name in ("ats-acme", "ats-globex", "reader-acme", "nobody", "operator", "burst", "batcher")
}
GRANTS = {
    "ats-acme": ("acme", ["postings:read", "postings:write"]),
    "ats-globex": ("globex", ["postings:read", "postings:write"]),
    "reader-acme": ("acme", ["postings:read"]),
    "nobody": ("acme", []),
    "operator": ("ops", ["postings:read", "ops"]),
    "burst": ("acme", ["postings:read"]),
    "batcher": ("acme", ["postings:read", "postings:write"]),
}
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
ISSUER, AUDIENCE = "https://idp.test", "jobpost-api"
JWKS_REFRESH_S = 1.0
ISSUED: list[str] = []  # every JWT this module made, for the log check at the end


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


class Issuer(http.server.ThreadingHTTPServer):
    """The identity provider's JWKS endpoint over TLS; `keys` (kid -> key) is what it lists."""

    def __init__(self, ca: CertificateAuthority) -> None:
        super().__init__(("127.0.0.1", 0), Jwks)
        self.keys: dict[str, rsa.RSAPrivateKey] = {"k1": KEY}
        issued = ca.issue("jwks", ["127.0.0.1"])
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(issued.certificate, issued.key)
        self.socket = context.wrap_socket(self.socket, server_side=True)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server_port}/jwks"


class Jwks(http.server.BaseHTTPRequestHandler):
    server: Issuer

    def do_GET(self) -> None:
        keys = [
            json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key())) | {"kid": kid, "use": "sig"}
            for kid, key in dict(self.server.keys).items()
        ]
        body = json.dumps({"keys": keys}).encode()
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
    issuer: Issuer

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
    employers = credentials.with_name("employers.json")  # whom they write for, at both boards
    employers.write_text(postings.employers_document(*{employer for employer, _ in GRANTS.values()}))
    ca = CertificateAuthority.create(tmp_path_factory.mktemp("ca"), "identity provider test CA")
    jwks = Issuer(ca)
    threading.Thread(target=jwks.serve_forever, args=(0.05,), daemon=True).start()
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
        kafka,
        DEV_TOKEN,
        elasticsearch_url,
        JOBPOST_API_SEARCH_ALIAS=alias,
        JOBPOST_API_CREDENTIALS_FILE=str(credentials),
        JOBPOST_API_CREDENTIALS_CHECK_S="0.2",
        JOBPOST_API_EMPLOYERS_FILE=str(employers),
        JOBPOST_API_OIDC_JWKS_URL=jwks.url,
        JOBPOST_API_OIDC_JWKS_CA_BUNDLE=str(ca.certificate),
        JOBPOST_API_OIDC_JWKS_REFRESH_S=str(JWKS_REFRESH_S),
        JOBPOST_API_OIDC_ISSUER=ISSUER,
        JOBPOST_API_OIDC_AUDIENCE=AUDIENCE,
        JOBPOST_API_RATE_LIMIT="60/second",
    )
    try:
        api.wait_ready()
        yield System(kafka, api, credentials, elasticsearch_url, alias, jwks)
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


def write_routes() -> list[tuple[str, str]]:
    """Every (method, path template) of the app that writes, as the gate's route walk sees them."""
    app = create_app(ApiSettings(tokens="t", internal_port=1))  # the routes only: never started
    return [
        (method, route.path)
        for route in every_route(app.router.routes)
        for method in sorted(set(route.methods or ()) & {"POST", "PUT", "PATCH", "DELETE"})
    ]


def test_a_read_only_and_a_no_scope_credential_are_refused_every_write_route(system):
    owner = system.client("ats-acme")
    posting = owner.create(title="Guarded")
    postings_topic = Topics(system.kafka.topic_prefix).postings
    before = len(read_postings(system.kafka, postings_topic))
    item = {"title": "Taken over", "description": "x"}
    bodies = {
        "/postings": item,
        "/postings/{posting_id}": item,
        "/postings:batch": {
            "items": [
                {"op": "create", "posting": item},
                {"op": "replace", "id": posting["id"], "posting": item},
                {"op": "delete", "id": posting["id"]},
            ]
        },
        "/ops/dead-letters/{board}/redrive": {},
        "/ops/boards/{board}/faults": {"mode": "error", "probability": 1.0},
        "/webhooks": {"url": "https://ats.example/hooks"},
        "/webhooks/{endpoint_id}/replay": {"since": "2026-12-01T00:00:00Z"},
    }
    routes = write_routes()
    # validate is a write route too, and the four of /webhooks (register, delete, rotate, replay)
    assert ("POST", "/postings:batch") in routes and ("POST", "/webhooks") in routes and len(routes) == 11
    for name in ("reader-acme", "nobody"):
        client = system.client(name)
        for method, template in routes:
            path = (
                template.replace("{posting_id}", posting["id"])
                .replace("{board}", "linkedin")
                .replace("{endpoint_id}", "ep_0000")
            )
            refused = client.request(method, path, json=bodies.get(template), expect=403)
            assert "lacks the scope" in refused["detail"], (name, method, path)

    assert owner.get(posting["id"], strong=True)["version"] == 0
    assert len(read_postings(system.kafka, postings_topic)) == before  # nothing written at all


def test_each_item_of_a_batch_counts_against_the_credentials_rate(system):
    batcher = system.client("batcher")
    items = [{"op": "create", "posting": postings.body(n, title=f"Batch {n}")} for n in range(61)]
    refused = batcher.request("POST", "/postings:batch", json={"items": items}, expect=429)  # 61 > 60/s
    assert "over its rate" in refused["detail"]
    written = read_postings(system.kafka, Topics(system.kafka.topic_prefix).postings)
    assert not any(update is not None and update.actor == "batcher" for _, _, update in written)
    few = batcher.request("POST", "/postings:batch", json={"items": items[:10]}, expect=200)
    assert [i["status"] for i in few["items"]] == [201] * 10


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


@pytest.mark.serial  # refused within 5 s
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


def bearer(
    key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey = KEY,
    kid: str = "k1",
    algorithm: str = "RS256",
    **claims: object,
) -> str:
    """A token of the test's issuer for this API, read-only for acme unless `claims` say else."""
    body = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": int(time.time()) + 300,
        "sub": "svc-acme",
        "employer": "acme",
        "scope": "openid postings:read",
    } | claims
    token = jwt.encode(body, key, algorithm=algorithm, headers={"kid": kid})
    ISSUED.append(token)
    return token


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


def test_a_jwt_naming_every_employer_is_refused_and_changes_nothing(system):
    globex = system.client("ats-globex")
    theirs = globex.create(title="Globex's own")
    wildcard = system.client(
        token=bearer(employer="*", sub="mallory", scope="postings:read postings:write ops")
    )
    for refused in (
        wildcard.get(theirs["id"], expect=401),
        wildcard.replace(theirs["id"], title="Every employer's", expect=401),
        wildcard.delete(theirs["id"], expect=401),
        wildcard.request(
            "POST", "/postings:batch", json={"items": [{"op": "delete", "id": theirs["id"]}]}, expect=401
        ),
    ):
        assert refused["title"] == "Unauthorized"
    assert globex.get(theirs["id"], strong=True)["version"] == 0
    assert versions_of(system.kafka, Topics(system.kafka.topic_prefix).postings, theirs["id"]) == [0]


def test_an_es256_header_over_an_rsa_key_is_a_401_without_a_stack_trace(system):
    posting = system.client("ats-acme").create(title="Algorithm confusion")
    mismatched = bearer(key=ec.generate_private_key(ec.SECP256R1()), algorithm="ES256")  # kid k1: RSA
    answer = system.client(token=mismatched).get(posting["id"], expect=401)
    assert answer["status"] == 401 and "Traceback" not in json.dumps(answer)
    log = system.api.log_path.read_text(errors="replace")
    assert "invalid_jwt (bearer JWT refused: InvalidAlgorithmError)" in log  # said in one line, no trace
    assert "unhandled error" not in log and "TypeError" not in log


@pytest.mark.serial  # refused within the refresh interval and 1.5 s
def test_a_key_removed_from_the_jwks_is_refused_within_the_refresh_interval(system):
    rotating = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    system.issuer.keys = {"k1": KEY, "k-old": rotating}
    posting = system.client("ats-acme").create(title="Rotated")
    client = system.client(token=bearer(key=rotating, kid="k-old"))
    wait_until(
        lambda: client.get(posting["id"], expect=(200, 401)).status_code == 200, 10, "the new key used"
    )

    system.issuer.keys = {"k1": KEY}  # the issuer rotates k-old out
    removed = time.monotonic()
    wait_until(lambda: client.get(posting["id"], expect=(200, 401)).status_code == 401, 10, "k-old refused")
    assert time.monotonic() - removed < JWKS_REFRESH_S + 1.5  # the interval, a fetch and a poll
    system.client(token=bearer()).get(posting["id"])  # k1 still trusted


def test_an_oidc_subject_named_like_a_file_credential_has_its_own_rate_and_actor(system):
    burst = system.client("burst")
    twin = system.client(token=bearer(sub="burst", scope="postings:read postings:write"))
    wait_until(
        lambda: any(burst.http.get("/postings/none").status_code == 429 for _ in range(200)), 10, "burst over"
    )
    twin.get("no-such-posting", expect=404)  # not burst's bucket
    created = twin.create(title="By the twin")

    def actors() -> set[str]:
        return {e.actor for e in audit_events(system.kafka) if e.posting_id == created["id"]}

    wait_until(lambda: actors() == {f"oidc:{ISSUER}#burst"}, 30, "the twin's audit event")


def dead_letter(kafka: KafkaSettings, update: PostingUpdate) -> None:
    """A LinkedIn dead letter for `update`, as the consumer writes one."""
    headers = DeadLetterHeaders("HTTP 400: rejected", Topics(kafka.topic_prefix).postings, 0, 0, 1, 1, 1)
    producer = KafkaClients(kafka).producer()
    producer.produce(
        Topics(kafka.topic_prefix).dlq("linkedin"),
        codec.posting_updates().encode(update),
        update.posting_id.encode(),
        headers=headers.to_headers(),
    )
    assert producer.flush(10) == 0


def test_every_accepted_write_and_redrive_is_in_the_audit_stream(system):
    acme, operator, dev = system.client("ats-acme"), system.client("operator"), system.client()
    created = acme.create(title="Audited")
    replaced = acme.replace(created["id"], title="Audited again")
    deleted = acme.delete(created["id"])
    by_dev = dev.create(title="By a development token")
    acme.replace(by_dev["id"], title="Refused: not acme's", expect=404)  # refused: not audited
    letter = PostingUpdate(
        by_dev["id"], 0, Op.CREATED, f"{by_dev['id']}:0", "r", postings.posting(2, title="Audited"), 1, 1
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
    details = f"{postings.body(0)['description']} The {word} details."
    posting = acme.create(title=f"Top {word} role", description=details, notes=word)
    acme.replace(posting["id"], title=f"Top {word} role, senior", description=f"{details} More {word}.")

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


def test_every_refusal_is_counted_and_no_token_reaches_the_log(system):
    """Last in this module: what every test above sent (file tokens, the development token,
    every JWT, valid or refused) is nowhere in the API's log, and its refusals are counted."""
    system.client(token="a-guessed-token-" + uuid.uuid4().hex).get("anything", expect=401)
    metrics = httpx.get(f"{system.api.url}/metrics", timeout=10).text
    counted = {
        line.split('reason="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("jobpost_api_auth_failures_total{")
    }
    assert counted.get("unknown_token", 0) >= 1 and counted.get("invalid_jwt", 0) >= 5
    assert counted.get("jwt_claims", 0) >= 1 and counted.get("scope", 0) >= 12

    log = system.api.log_path.read_text(errors="replace")
    assert "401 GET /postings/anything" in log and "lacks the scope" in log  # refusals are logged
    secrets = [*TOKENS.values(), DEV_TOKEN, *ISSUED]
    for secret in secrets:
        assert secret not in log, "a token in the API's log"
        assert secret.split(".")[-1] not in log  # not even a JWT's signature
