"""Entry point: `jobpost webhooks`, the dispatcher, and what it is built from."""

from __future__ import annotations

import asyncio
import signal

import aiohttp
from prometheus_client import start_http_server

from runtime.topics import check_at_start
from webhooks.config import DispatcherSettings
from webhooks.dispatcher import Dispatcher


def client_session(settings: DispatcherSettings) -> aiohttp.ClientSession:
    """One HTTP client for every endpoint: a connection per request in flight, the
    settings' CAs, no cookies kept between endpoints."""
    connector = aiohttp.TCPConnector(limit=settings.max_in_flight, ssl=settings.tls())
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


def run_dispatcher() -> None:
    settings = DispatcherSettings()
    box = settings.secrets.box()
    if box is None:
        raise SystemExit(
            "error: the webhooks dispatcher does not start: JOBPOST_WEBHOOK_SECRETS_KEY is not set "
            "(the Fernet key the API encrypts the endpoints' secrets with)"
        )
    check_at_start(settings.kafka)
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.metrics_host)

    async def main() -> None:
        async with client_session(settings) as session:
            dispatcher = Dispatcher(settings, session, box)
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, dispatcher.stop)
            await dispatcher.run()

    asyncio.run(main())
