"""What /readyz checks: Kafka (the reply reader and the view), the sequencer group, search."""

from __future__ import annotations

import asyncio
import time

import httpx
from confluent_kafka.admin import AdminClient

from producer_api.commands import CommandClient
from producer_api.config import ApiSettings
from producer_api.view import PostingsView


class Readiness:
    def __init__(self, settings: ApiSettings, commands: CommandClient, view: PostingsView) -> None:
        self.settings = settings
        self.commands = commands
        self.view = view
        self._admin = AdminClient(settings.kafka.client_config())
        self._cached: tuple[float, dict[str, bool]] | None = None

    async def check(self) -> dict[str, bool]:
        if self._cached and time.monotonic() - self._cached[0] < 1.0:
            return self._cached[1]
        sequencer, search = await asyncio.gather(
            asyncio.to_thread(self._sequencer_has_members), self._search_answers()
        )
        checks = {
            "kafka": self.commands.ready.is_set() and self.view.ready.is_set(),
            "sequencer": sequencer,
            "elasticsearch": search,
        }
        self._cached = (time.monotonic(), checks)
        return checks

    def _sequencer_has_members(self) -> bool:
        futures = self._admin.describe_consumer_groups([self.settings.sequencer_group], request_timeout=2)
        try:
            group = futures[self.settings.sequencer_group].result(timeout=3)
        except Exception:  # noqa: BLE001 - any failure to describe means "not known to be ready"
            return False
        return len(group.members) > 0

    async def _search_answers(self) -> bool:
        try:
            async with httpx.AsyncClient(timeout=2) as client:
                health = await client.get(f"{self.settings.elasticsearch_url}/_cluster/health")
        except httpx.HTTPError:
            return False
        return health.status_code == 200 and health.json().get("status") in ("green", "yellow")
