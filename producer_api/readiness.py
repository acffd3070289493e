"""What /readyz checks: that this replica can serve a write and a read right now.

- kafka: the reply reader and the views are running, and the views have caught up (each
  names the partitions it is still reading);
- sequencer: every partition of `jobpost.commands` is owned by a live member of the
  sequencer group, and this replica's own member (when it embeds one) has a session up
  with every partition it owns restored;
- elasticsearch: the search server answers.

Each check that fails names why, so an operator sees "partitions [0, 3] restoring" rather
than a bare false; never with an exception's text (the answer needs no token: what a
client library says about the cluster goes to the log only).
"""

from __future__ import annotations

import asyncio
import logging
import time

from prometheus_client import Gauge

from producer_api.commands import CommandClient
from producer_api.config import ApiSettings
from producer_api.read.log_view import LogView, ViewStatus
from producer_api.read.search import TitleSearch
from runtime.kafka_clients import KafkaClients
from schemas.topics import Topics
from sequencer.member import Sequencer

log = logging.getLogger(__name__)
Checks = dict[str, str | None]  # check -> None when it passes, else why not

# What /readyz answered last, as 1 or 0, for an alert on a replica not ready (/metrics
# checks readiness first, so a scrape sees it as of now).
READY = Gauge("jobpost_api_ready", "1 when this replica can take a write and serve a read, else 0")


class Readiness:
    def __init__(
        self,
        settings: ApiSettings,
        commands: CommandClient,
        views: list[LogView],
        sequencer: Sequencer | None,
        search: TitleSearch,
    ) -> None:
        self.settings = settings
        self.commands = commands
        self.views = views
        self.sequencer = sequencer
        self.search = search
        self._admin = KafkaClients(settings.kafka).admin()
        self._cached: tuple[float, Checks] | None = None

    async def check(self) -> Checks:
        if self._cached and time.monotonic() - self._cached[0] < 1.0:
            return self._cached[1]
        group, search = await asyncio.gather(
            asyncio.to_thread(self._group_covers_commands), self.search.health()
        )
        checks: Checks = {
            "kafka": self._kafka(),
            "sequencer": self._own_member() or group,
            "elasticsearch": search,
        }
        self._cached = (time.monotonic(), checks)
        READY.set(0 if any(checks.values()) else 1)
        return checks

    def _kafka(self) -> str | None:
        if not self.commands.ready.is_set():
            return "the reply reader is not running"
        behind = [_catching_up(v.topic, status) for v in self.views if not (status := v.status).ready]
        return "; ".join(behind) if behind else None

    def _own_member(self) -> str | None:
        sequencer = self.sequencer
        if sequencer is None:
            return None
        status = sequencer.status
        if not status.session_up:
            return "this replica's sequencer member has no session"
        if status.restoring:
            return f"this replica's sequencer is restoring partitions {sorted(status.restoring)}"
        return None

    def _group_covers_commands(self) -> str | None:
        group_id = self.settings.sequencer_group
        topic = Topics(self.settings.kafka.topic_prefix).commands
        try:
            metadata = self._admin.list_topics(topic, timeout=2).topics[topic]
            group = self._admin.describe_consumer_groups([group_id], request_timeout=2)[group_id].result(3)
        except Exception:  # any failure to ask means "not known to be ready"
            # The answer is unauthenticated: it names the check, the log keeps Kafka's words.
            log.warning("readiness: cannot describe the sequencer group", exc_info=True)
            return "cannot describe the sequencer group (the API's log says why)"
        owned = {
            tp.partition
            for member in group.members
            for tp in (member.assignment.topic_partitions if member.assignment else [])
            if tp.topic == topic
        }
        orphans = sorted(set(metadata.partitions) - owned)
        return f"no sequencer member owns partitions {orphans}" if orphans else None


def _catching_up(topic: str, status: ViewStatus) -> str:
    if status.behind:
        return f"{topic} catching up on partitions {sorted(status.behind)}"
    return f"{topic} not followed yet"
