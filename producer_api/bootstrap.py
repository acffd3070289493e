"""The API deployable put together: every part the HTTP front serves from, built from the
settings by one plain function (`bootstrap`), started and stopped as a whole. Nothing here
knows FastAPI: the app's lifespan (`producer_api.http.app`) only starts what it is given,
hands the parts to the routes and stops them; a test can build the same parts without it.

The order is the design's: a new replica first copies a live peer's stores
(`copy_from_peers`, before any view opens them); the views and the command client start
before the embedded sequencer member, which runs on a thread of its own and never ends the
process (decision 0011); on the way out the member leaves its group first, so its
partitions move at once, then everything else closes.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

from listing.employers import EmployerRegistry
from producer_api.audit import Audit
from producer_api.bulkhead import Bulkhead
from producer_api.commands import CommandClient
from producer_api.config import ApiSettings
from producer_api.http.identity import Identity
from producer_api.operations import Operations
from producer_api.read.board_status_view import BoardStatusView
from producer_api.read.dead_letter_index import DeadLettersView
from producer_api.read.log_view import LogView
from producer_api.read.title_search import TitleSearch
from producer_api.read.views import DeliveriesView, DeliveryEventsView, PostingsView
from producer_api.readiness import Readiness
from producer_api.service import PostingService
from producer_api.webhook_service import WebhookService, open_webhooks
from runtime.snapshots import fetch, has_state
from schemas.model import Destination
from schemas.topics import BOARDS
from sequencer.config import SequencerSettings
from sequencer.member import Sequencer, run_in_process

SEQUENCER_LEAVE_S = 15.0  # how long stopping waits for the member to leave its group


@dataclass
class ApiParts:
    """What the HTTP front serves from. Built, not started: `start`, then `stop`."""

    settings: ApiSettings
    identity: Identity
    commands: CommandClient
    postings: PostingsView
    deliveries: DeliveriesView
    events: DeliveryEventsView
    letters: dict[Destination, DeadLettersView]
    board_status: BoardStatusView
    sequencer: Sequencer | None
    audit: Audit
    searches: Bulkhead
    strong_reads: Bulkhead
    search: TitleSearch
    service: PostingService
    operations: Operations
    readiness: Readiness
    webhooks: WebhookService
    _sequencing: threading.Thread | None = None

    def views(self) -> tuple[LogView, ...]:
        return (self.postings, self.deliveries, self.events, *self.letters.values(), self.board_status)

    def start(self) -> None:
        """The command client and the views, then the embedded sequencer member's thread."""
        self.commands.start()
        for view in self.views():
            view.start()
        if self.sequencer is not None:
            member = threading.Thread(target=run_in_process, args=(self.sequencer,), daemon=True)
            member.name = "sequencer"
            member.start()
            self._sequencing = member

    async def stop(self) -> None:
        """The member leaves its group first (its partitions move at once instead of after
        the session timeout), then every other part closes."""
        if self.sequencer is not None and self._sequencing is not None:
            self.sequencer.stop()
            await asyncio.to_thread(self._sequencing.join, SEQUENCER_LEAVE_S)
        for view in self.views():  # told together, they end together
            view.stop()
        for view in self.views():
            view.close()
        self.operations.close()
        self.webhooks.close()
        self.commands.close()
        self.search.close()
        self.searches.close()
        self.strong_reads.close()
        self.audit.close()


def copy_from_peers(settings: ApiSettings) -> None:
    """A new replica (no local state, peers named): a live one's stores, so only what came
    since is read from Kafka. Blocking: call it off the event loop, before `bootstrap`."""
    if settings.peers() and not has_state(settings.state.dir, PostingsView.reader):
        fetch(settings.peers(), settings.peer_token(), settings.state.dir, verify=settings.peer_verify())


def bootstrap(
    settings: ApiSettings,
    sequencer_settings: SequencerSettings | None = None,
    identity: Identity | None = None,
) -> ApiParts:
    """Every part of the API deployable, from its settings (nothing started)."""
    commands = CommandClient(settings.kafka, settings.command_budget_s, settings.write_timeout_s)
    postings = PostingsView(settings.kafka, settings.state)
    deliveries = DeliveriesView(settings.kafka, settings.state)
    events = DeliveryEventsView(settings.kafka, settings.state)
    letters = {board: DeadLettersView(settings.kafka, board, settings.state) for board in BOARDS}
    board_status = BoardStatusView(settings.kafka, settings.state)
    sequencer = None
    if settings.embedded_sequencer:
        sequencer = Sequencer(sequencer_settings or SequencerSettings(kafka=settings.kafka))
    audit = Audit(settings.kafka)
    searches = Bulkhead("searches", settings.searches_max, settings.strong_read_timeout_s)
    strong_reads = Bulkhead("strong reads", settings.strong_reads_max, settings.strong_read_timeout_s)
    search = TitleSearch(settings.elasticsearch, settings.search_alias, searches)
    service = PostingService(
        commands,
        postings,
        deliveries,
        search,
        settings.write_timeout_s,
        events,
        audit,
        strong_reads,
        EmployerRegistry.load(settings.employers_file),
    )
    return ApiParts(
        settings=settings,
        identity=identity or Identity.of(settings),
        commands=commands,
        postings=postings,
        deliveries=deliveries,
        events=events,
        letters=letters,
        board_status=board_status,
        sequencer=sequencer,
        audit=audit,
        searches=searches,
        strong_reads=strong_reads,
        search=search,
        service=service,
        operations=Operations(settings, deliveries, postings, letters, board_status),
        readiness=Readiness(settings, commands, [postings, deliveries], sequencer, search),
        webhooks=open_webhooks(settings, audit),
    )
