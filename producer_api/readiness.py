"""What /readyz checks: what this replica can serve right now, per capability.

- writes: the reply reader runs, and the sequencer can take the write: every partition of
  `jobpost.commands` is owned by a live member of the sequencer group, and this replica's
  own member (when it embeds one) has a session up with every partition it owns restored;
- reads: the views (postings, deliveries) have caught up (each names the partitions it is
  still reading);
- search: the search server answers.

The checks of before stay as they were (kafka: the reply reader and the views; sequencer;
elasticsearch), and `/readyz` without `for` still answers 200 only when all of it is ready.
A replica whose sequencer member is being replaced, or gave up and pauses, still serves
reads: `/readyz?for=reads` says so.

Each check that fails names why, so an operator sees "partitions [0, 3] restoring" rather
than a bare false; never with an exception's text (the answer needs no token: what a
client library says about the cluster goes to the log only).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from prometheus_client import Gauge

from producer_api.commands import CommandClient
from producer_api.config import ApiSettings
from producer_api.read.log_view import LogView, ViewStatus
from producer_api.read.title_search import TitleSearch
from runtime.kafka_clients import KafkaClients
from schemas.topics import Topics
from sequencer.member import Sequencer

log = logging.getLogger(__name__)
Checks = dict[str, str | None]  # check (or capability) -> None when it passes, else why not
CAPABILITIES = ("writes", "reads", "search")

# What /readyz answered last, as 1 or 0, for an alert on a replica not ready (/metrics
# checks readiness first, so a scrape sees it as of now).
READY = Gauge("jobpost_api_ready", "1 when this replica can take a write and serve a read, else 0")
CAPABLE = Gauge(
    "jobpost_api_capability_ready",
    "1 when this replica can serve this capability now, else 0",
    ["capability"],
)


@dataclass(frozen=True)
class Report:
    """One look at readiness: the checks of before, and what they make of each capability."""

    checks: Checks  # kafka, sequencer, elasticsearch
    capabilities: Checks  # writes, reads, search


def _joined(*why: str | None) -> str | None:
    found = [w for w in why if w is not None]
    return "; ".join(found) if found else None


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
        self._cached: tuple[float, Report] | None = None

    async def check(self) -> Checks:
        """The checks of before: kafka, sequencer, elasticsearch."""
        return (await self.report()).checks

    async def report(self) -> Report:
        if self._cached and time.monotonic() - self._cached[0] < 1.0:
            return self._cached[1]
        group, search = await asyncio.gather(
            asyncio.to_thread(self._group_covers_commands), self.search.health()
        )
        replies, views, sequencer = self._replies(), self._views(), self._own_member() or group
        report = Report(
            checks={"kafka": _joined(replies, views), "sequencer": sequencer, "elasticsearch": search},
            capabilities={"writes": _joined(replies, sequencer), "reads": views, "search": search},
        )
        self._cached = (time.monotonic(), report)
        READY.set(0 if any(report.checks.values()) else 1)
        for capability, why in report.capabilities.items():
            CAPABLE.labels(capability).set(0 if why else 1)
        return report

    def _replies(self) -> str | None:
        return None if self.commands.ready.is_set() else "the reply reader is not running"

    def _views(self) -> str | None:
        behind = [_catching_up(v.topic, status) for v in self.views if not (status := v.status).ready]
        return "; ".join(behind) if behind else None

    def _own_member(self) -> str | None:
        sequencer = self.sequencer
        if sequencer is None:
            return None
        status = sequencer.status
        if status.failed:
            return "this replica's sequencer member gave up and starts again shortly (the API's log says why)"
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
