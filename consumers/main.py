"""Entry point: `jobpost consumer <linkedin|indeed>`, and what it is built from."""

from __future__ import annotations

import asyncio
import signal

import aiohttp
from prometheus_client import start_http_server

from consumers.board_tokens import token_source
from consumers.boards.indeed import IndeedAdapter
from consumers.boards.linkedin import LinkedInAdapter
from consumers.boards.settings import UnsafeBoardSettings
from consumers.clock import Clock
from consumers.config import ConsumerSettings
from consumers.destination.budget import RateBudget
from consumers.destination.circuit import Circuit
from consumers.destination.quota import DailyQuota, QuotaKind, reset_offset_ms
from consumers.destination.shared import SharedDestination
from consumers.runner import DeliveryRunner
from runtime.topics import check_at_start
from schemas.model import Destination


def destination_for(
    settings: ConsumerSettings, client: aiohttp.ClientSession, clock: Clock | None = None
) -> SharedDestination:
    """The board's destination: its adapter, its one token source, its budget, daily caps and circuit.
    Refuses (UnsafeBoardSettings) a real board with the sandbox's credentials or none."""
    board = settings.linkedin if settings.destination == Destination.LINKEDIN else settings.indeed
    board.check_credentials()
    tokens = token_source(client, settings.destination, board)
    if settings.destination == Destination.LINKEDIN:
        adapter: LinkedInAdapter | IndeedAdapter = LinkedInAdapter(client, settings.linkedin)
    else:
        adapter = IndeedAdapter(client, settings.indeed)
    return SharedDestination(
        adapter,
        tokens,
        RateBudget(settings.records_per_minute, settings.requests_per_minute),
        Circuit(settings.circuit),
        max_in_flight=settings.max_in_flight,
        batch_wait_ms=settings.batch_wait_ms,
        task_poll_interval_s=settings.task_poll_interval_s,
        task_timeout_s=settings.task_timeout_s,
        clock=clock,
        quota=DailyQuota(
            {
                QuotaKind.RECORDS: board.records_per_day,
                QuotaKind.REQUESTS: board.requests_per_day,
                QuotaKind.TASK_STATUS_CALLS: board.task_status_calls_per_day,
            },
            reset_offset_ms=reset_offset_ms(board.daily_reset_utc),
            day_ms=round(board.quota_day_s * 1000),
        ),
    )


def client_session(settings: ConsumerSettings) -> aiohttp.ClientSession:
    """One HTTP client for the board: a connection per call in flight, and a few for the
    token endpoint and the task polls."""
    connector = aiohttp.TCPConnector(limit=settings.max_in_flight + 4, ssl=settings.board_tls())
    return aiohttp.ClientSession(connector=connector)


def run_consumer(destination: str) -> None:
    settings = ConsumerSettings(destination=Destination(destination))
    check_at_start(settings.kafka)
    try:
        (
            settings.linkedin if settings.destination == Destination.LINKEDIN else settings.indeed
        ).check_credentials()
    except UnsafeBoardSettings as exc:
        raise SystemExit(f"error: the {destination} consumer does not start: {exc}") from exc
    if settings.metrics_port:
        start_http_server(settings.metrics_port, addr=settings.metrics_host)

    async def main() -> None:
        async with client_session(settings) as client:
            runner = DeliveryRunner(settings, destination_for(settings, client))
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, runner.stop)
            await runner.run()

    asyncio.run(main())
