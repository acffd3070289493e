"""Elasticsearch access as an operator configures it: a bare URL, an API key or a username and
password (secrets), a CA bundle; checked against an HTTPS endpoint whose certificate a CA
made here signed (the local search server runs without TLS, so this is the TLS handshake and
the credentials on the wire, not Elasticsearch itself)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from elasticsearch import ConnectionError as EsConnectionError
from pydantic import ValidationError

from jobpost_dev.stack.tls import CertificateAuthority
from producer_api.config import ApiSettings
from runtime.search_server import ElasticsearchSettings
from search_indexer.config import IndexerSettings


class HealthEndpoint(BaseHTTPRequestHandler):
    """Answers `_cluster/health` as Elasticsearch does and remembers each Authorization."""

    seen: list[str | None] = []

    def do_GET(self) -> None:
        HealthEndpoint.seen.append(self.headers.get("Authorization"))
        body = json.dumps({"status": "green"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-elastic-product", "Elasticsearch")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority.create(tmp_path_factory.mktemp("ca"), "test CA")


@pytest.fixture(scope="module")
def https(authority: CertificateAuthority) -> Iterator[str]:
    issued = authority.issue("search", ["localhost", "127.0.0.1"])
    server = ThreadingHTTPServer(("127.0.0.1", 0), HealthEndpoint)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(issued.certificate, issued.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()  # quick shutdown
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if "_ELASTICSEARCH_" in n]:
        monkeypatch.delenv(name)
    HealthEndpoint.seen.clear()


def test_an_api_key_and_the_ca_bundle_reach_the_server(https: str, authority: CertificateAuthority) -> None:
    settings = ElasticsearchSettings(url=https, api_key="a2V5LWlkOmtleQ==", ca_bundle=authority.certificate)

    assert settings.client(max_retries=0).cluster.health()["status"] == "green"
    assert HealthEndpoint.seen == ["ApiKey a2V5LWlkOmtleQ=="]


def test_basic_auth_inside_the_url_moves_to_the_secret_fields(
    https: str, authority: CertificateAuthority
) -> None:
    url = https.replace("https://", "https://reader:p%40ss@")

    settings = ElasticsearchSettings(url=url, ca_bundle=authority.certificate)

    assert (settings.url, settings.username) == (https, "reader")
    assert "p@ss" not in repr(settings) and "p%40ss" not in repr(settings)
    settings.client(max_retries=0).cluster.health()
    assert HealthEndpoint.seen == ["Basic " + base64.b64encode(b"reader:p@ss").decode()]


def test_a_server_signed_by_another_ca_is_refused(https: str, tmp_path: Path) -> None:
    other = CertificateAuthority.create(tmp_path, "another CA")
    settings = ElasticsearchSettings(url=https, ca_bundle=other.certificate)

    with pytest.raises(EsConnectionError, match="TLS error") as refused:
        settings.client(max_retries=0).cluster.health()
    assert "CERTIFICATE_VERIFY_FAILED" in repr(refused.value)
    assert HealthEndpoint.seen == []


def test_the_bare_url_keeps_working(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_API_ELASTICSEARCH_URL", "http://search.internal:9200")
    monkeypatch.setenv("JOBPOST_INDEXER_ELASTICSEARCH_URL", "http://index.internal:9200")

    assert ApiSettings().elasticsearch.url == "http://search.internal:9200"
    assert IndexerSettings().elasticsearch.url == "http://index.internal:9200"


def test_each_deployable_has_its_own_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBPOST_API_ELASTICSEARCH_URL", "https://search.internal:9200")
    monkeypatch.setenv("JOBPOST_API_ELASTICSEARCH_API_KEY", "reader-key")
    monkeypatch.setenv("JOBPOST_INDEXER_ELASTICSEARCH_URL", "https://search.internal:9200")
    monkeypatch.setenv("JOBPOST_INDEXER_ELASTICSEARCH_USERNAME", "indexer")
    monkeypatch.setenv("JOBPOST_INDEXER_ELASTICSEARCH_PASSWORD", "writer-password")

    api, indexer = ApiSettings().elasticsearch, IndexerSettings().elasticsearch

    assert api.api_key is not None and api.api_key.get_secret_value() == "reader-key"
    assert api.username is None
    assert indexer.username == "indexer" and indexer.api_key is None
    for shown in (repr(ApiSettings()), repr(IndexerSettings()), IndexerSettings().model_dump_json()):
        assert "reader-key" not in shown and "writer-password" not in shown


@pytest.mark.parametrize(
    ("given", "refusal"),
    [
        ({"url": "https://u:p@search:9200", "username": "u"}, "both in the URL and as settings"),
        ({"url": "https://search:9200", "api_key": "k", "username": "u", "password": "p"}, "not both"),
        ({"url": "https://search:9200", "username": "u"}, "goes with a password"),
        ({"url": "http://search:9200", "ca_bundle": "/etc/ssl/certs/ca-certificates.crt"}, "for an https"),
        ({"url": "https://search:9200", "ca_bundle": "/nowhere/ca.pem"}, "no CA bundle at /nowhere/ca.pem"),
        ({"url": "search:9200"}, "must be http"),
    ],
)
def test_contradictions_are_refused_without_quoting_secrets(given: dict[str, str], refusal: str) -> None:
    with pytest.raises(ValidationError, match=refusal) as refused:
        ElasticsearchSettings(**given)
    assert "'p'" not in str(refused.value) and ":p@" not in str(refused.value)
