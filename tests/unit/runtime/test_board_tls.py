"""The boards' TLS: a consumer's HTTP session verifies a board's certificate against the CA
bundle its settings name (a private CA, a company's TLS-inspecting proxy), against a local
HTTPS server whose certificate a CA made here signed."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from consumers.config import ConsumerSettings
from jobpost_dev.stack.tls import CertificateAuthority
from runtime.http import client_tls
from schemas.model import Destination


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> CertificateAuthority:
    return CertificateAuthority.create(tmp_path_factory.mktemp("ca"), "boards test CA")


def status_over_tls(authority: CertificateAuthority, trusted: ssl.SSLContext) -> int:
    issued = authority.issue("board", ["localhost", "127.0.0.1"])
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(issued.certificate, issued.key)

    async def ping(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def call() -> int:
        app = web.Application()
        app.router.add_get("/ping", ping)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=serving)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with (
                aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trusted)) as client,
                client.get(f"https://127.0.0.1:{port}/ping") as answer,
            ):
                return answer.status
        finally:
            await runner.cleanup()

    return asyncio.run(call())


def test_a_board_signed_by_the_configured_ca_is_reached(authority: CertificateAuthority) -> None:
    assert status_over_tls(authority, client_tls(authority.certificate)) == 200


def test_without_the_bundle_the_system_cas_do_not_know_it(authority: CertificateAuthority) -> None:
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        status_over_tls(authority, client_tls())


def test_each_board_has_its_own_bundle(
    monkeypatch: pytest.MonkeyPatch, authority: CertificateAuthority
) -> None:
    monkeypatch.setenv("JOBPOST_CONSUMER_INDEED__CA_BUNDLE", str(authority.certificate))

    indeed = ConsumerSettings(destination=Destination.INDEED)
    linkedin = ConsumerSettings(destination=Destination.LINKEDIN)

    assert status_over_tls(authority, indeed.board_tls()) == 200
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        status_over_tls(authority, linkedin.board_tls())


def test_a_missing_bundle_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no CA bundle at"):
        client_tls(tmp_path / "nowhere.pem")
