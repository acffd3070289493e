"""The service layer: turns validated requests into commands and replies into postings."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from enum import StrEnum
from typing import Any

import listing
from listing.employers import SANDBOX_REGISTRY, EmployerRegistry
from listing.problems import Problem
from producer_api.audit import Audit
from producer_api.bulkhead import Bulkhead, BulkheadFull
from producer_api.callers import Caller
from producer_api.commands import CommandClient, NotWritten
from producer_api.read import timeline
from producer_api.read.progress import Progress, progress
from producer_api.read.timeline import Timeline
from producer_api.read.title_search import BadCursor, SearchUnavailable, TitleSearch
from producer_api.read.views import DeliveriesView, DeliveryEventsView, PostingsView, PostingView
from schemas.model import DEFAULT_EMPLOYER, Action, Command, Destination, Outcome, Posting
from schemas.search import SearchDocument

# Posting ids derived from a create's Idempotency-Key, so a retried create lands on the
# same posting (and the sequencer recognises the request) instead of making a second one.
_ID_NAMESPACE = uuid.UUID("4f1d2c8e-9b0a-4e57-a3c1-6a2b7f0e9d11")


class Refusal(StrEnum):
    """Why a request is refused: the sequencer's outcomes other than ACCEPTED, and the
    service's own (named by the same symbols)."""

    NOT_FOUND = "NOT_FOUND"
    GONE = "GONE"
    VERSION_MISMATCH = "VERSION_MISMATCH"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    KEY_REUSED = "KEY_REUSED"
    BAD_CURSOR = "BAD_CURSOR"  # a search cursor this API did not make

    @classmethod
    def of(cls, outcome: Outcome) -> Refusal:
        """The refusal a sequencer's outcome stands for (not ACCEPTED: a ValueError)."""
        return cls(outcome.value)


class PostingError(Exception):
    """A request the postings refuse; `kind` names why, `detail` says it to the client, and
    `version` is the posting's when it is known."""

    def __init__(self, kind: Refusal, detail: str | None = None, version: int | None = None) -> None:
        self.kind = kind
        self.detail = detail or _REFUSALS[kind]
        self.version = version
        super().__init__(self.detail)


class Unavailable(Exception):
    """Not served now (a read not caught up, search down): retry later."""


class NotApplied(Unavailable):
    """The write was not applied and never will be: safe to retry, with or without a key."""


_REFUSALS = {
    Refusal.NOT_FOUND: "no posting has this id",
    Refusal.GONE: "the posting was deleted",
    Refusal.VERSION_MISMATCH: "the posting is at another version than If-Match names",
    Refusal.ALREADY_EXISTS: "a posting with this id exists already",
    Refusal.KEY_REUSED: "this Idempotency-Key was used for another request on this posting within 24 hours",
    Refusal.BAD_CURSOR: "the cursor was not made by this API",
}
_METHOD_OF = {Action.CREATE: "POST", Action.REPLACE: "PUT", Action.DELETE: "DELETE"}


def request_fingerprint(action: Action, posting: Posting | None) -> str:
    """What makes two requests "the same request" for an Idempotency-Key: method and body.
    The sequencer keeps it in the log, so it must not change between releases."""
    body = None if posting is None else _body(posting)
    canonical = json.dumps([_METHOD_OF[action], body], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _body(posting: Posting) -> dict[str, Any]:
    """The body's fields, as JSON had them; the optional fields only when they differ from
    their defaults, so a request of a release before them keeps its fingerprint."""
    fields = posting.to_avro()
    return {name: value for name, value in fields.items() if name in _ALWAYS or value != _DEFAULTS[name]}


_ALWAYS = {"title", "description", "notes"}
_DEFAULTS = Posting("", "").to_avro()


def create_id(employer: str, request_id: str | None) -> str:
    """A create's posting id: derived from its Idempotency-Key (so a retried create lands on
    the same posting) within the employer (so two employers' keys never meet), else random."""
    if not request_id:
        return str(uuid.uuid4())
    scoped = request_id if employer == DEFAULT_EMPLOYER else f"{employer}\x00{request_id}"
    return str(uuid.uuid5(_ID_NAMESPACE, scoped))


class PostingService:
    def __init__(
        self,
        commands: CommandClient,
        view: PostingsView,
        deliveries: DeliveriesView,
        search: TitleSearch,
        write_timeout_s: float,
        events: DeliveryEventsView | None = None,
        audit: Audit | None = None,
        strong_reads: Bulkhead | None = None,
        employers: EmployerRegistry = SANDBOX_REGISTRY,
    ) -> None:
        self.commands = commands
        self.employers = employers
        self.audit = audit
        self.strong_reads = strong_reads
        self.view = view
        self.deliveries_view = deliveries
        self.events = events
        self.titles = search
        self.write_timeout_s = write_timeout_s

    async def search(
        self, caller: Caller, text: str, limit: int, cursor: str | None
    ) -> tuple[list[SearchDocument], str | None]:
        """The caller's employer's postings only (an operator's: every employer's)."""
        try:
            return await self.titles.search(text, limit, cursor, None if caller.operator else caller.employer)
        except BulkheadFull as exc:
            raise Unavailable(str(exc)) from exc
        except BadCursor as exc:
            raise PostingError(Refusal.BAD_CURSOR, str(exc)) from exc
        except SearchUnavailable as exc:
            raise Unavailable(f"search is unavailable: {exc}") from exc

    def listing(
        self, caller: Caller, posting: Posting, posting_id: str | None = None
    ) -> dict[Destination, list[Problem]]:
        """What each board the posting targets would refuse in it (`listing`), for the
        employer it is written for: the caller's, or for an operator's replace the posting's."""
        employer = caller.employer
        if posting_id is not None and caller.operator:
            known = self.view.get(posting_id)
            employer = employer if known is None or known.employer is None else known.employer
        return listing.problems_by_board(posting, employer, self.employers)

    async def create(self, caller: Caller, posting: Posting, request_id: str | None) -> PostingView:
        posting_id = create_id(caller.employer, request_id)
        return await self._write(caller, Action.CREATE, posting_id, request_id, posting, None)

    async def replace(
        self, caller: Caller, posting_id: str, posting: Posting, request_id: str | None, expected: int | None
    ) -> PostingView:
        return await self._write(caller, Action.REPLACE, posting_id, request_id, posting, expected)

    async def delete(
        self, caller: Caller, posting_id: str, request_id: str | None, expected: int | None
    ) -> PostingView:
        return await self._write(caller, Action.DELETE, posting_id, request_id, None, expected)

    async def get(self, caller: Caller, posting_id: str, strong: bool, timeout_s: float) -> PostingView:
        if strong:
            await self._caught_up(posting_id, timeout_s)
        view = self._found(caller, posting_id)
        if view.deleted:
            raise PostingError(Refusal.GONE, version=view.version)
        return view

    async def _caught_up(self, posting_id: str, timeout_s: float) -> None:
        """Wait until the view has read what was committed before now (within a slot of the
        strong reads' bulkhead, its end offset asked on the bulkhead's own threads)."""
        try:
            if self.strong_reads is None:
                await self.view.wait_for_end(posting_id, timeout_s)
                return
            async with self.strong_reads.slot():
                await self.view.wait_for_end(posting_id, timeout_s, self.strong_reads.thread)
        except Exception as exc:
            raise Unavailable(f"the read view did not catch up: {exc}") from exc

    def _found(self, caller: Caller, posting_id: str) -> PostingView:
        """The posting, if it exists for this caller: another employer's is not found,
        whether it lives or was deleted."""
        view = self.view.get(posting_id)
        if view is None:
            if self.view.restoring(posting_id):  # not read yet is not "not found"
                raise Unavailable("this replica is still reading the posting's partition")
            raise PostingError(Refusal.NOT_FOUND)
        if not caller.sees(view.employer):
            raise PostingError(Refusal.NOT_FOUND)
        return view

    def deliveries(self, caller: Caller, posting_id: str) -> tuple[PostingView, list[Progress]]:
        """The posting's newest version and its progress at every destination."""
        view = self._found(caller, posting_id)
        boards = view.posting.boards if view.posting is not None else None
        return view, progress(self.deliveries_view.get(posting_id), view.version, boards)

    def timeline(self, caller: Caller, posting_id: str) -> Timeline:
        """The posting's versions and what each came to at every destination."""
        view = self._found(caller, posting_id)
        versions = [v for v in self.view.versions(posting_id) if v.version <= view.version]
        if not versions:
            title = view.posting.title if view.posting else ""
            versions = timeline.fallback_versions(
                view.version, view.deleted, title, view.last_update_time_millis
            )
        events = self.events.get(posting_id) if self.events is not None else []
        states = self.deliveries_view.get(posting_id)
        return timeline.build(posting_id, view.version, view.deleted, versions, events, states)

    async def _write(
        self,
        caller: Caller,
        action: Action,
        posting_id: str,
        request_id: str | None,
        posting: Posting | None,
        expected: int | None,
    ) -> PostingView:
        command = Command(
            request_id=request_id or "",  # none: the command client uses its correlation id
            posting_id=posting_id,
            action=action,
            received_at=time.time_ns() // 1_000_000,
            posting=posting,
            expected_version=expected,
            request_fingerprint=request_fingerprint(action, posting),
            employer=caller.employer,
            operator=caller.operator,
            actor=caller.name,
        )
        # No verdict in time raises OutcomeUnknown (504): neither applied nor refused is known.
        try:
            reply = await self.commands.send(command, self.write_timeout_s)
        except NotWritten as exc:
            raise NotApplied(f"{exc}; it was not applied and never will be") from exc
        if reply.outcome == Outcome.EXPIRED:
            raise NotApplied(
                "the sequencer did not reach the write within its budget: "
                "it was not applied and never will be"
            )
        if reply.outcome != Outcome.ACCEPTED:
            raise PostingError(Refusal.of(reply.outcome), version=reply.version)
        assert reply.version is not None  # an accepted command always has a version
        if self.audit is not None:
            self.audit.accepted(caller, action, posting_id, reply.version)
        # A replay of an earlier request had the same body (its fingerprint matched), so the
        # request's own body is the posting at the version the reply names. An accepted
        # command of one employer is about that employer's posting; an operator's, about
        # the employer the view knows (read-your-writes waits for the view when it knows none).
        owner = self._owner(caller, action, posting_id)
        view = PostingView(
            posting_id,
            reply.version,
            reply.deleted,
            None if reply.deleted else posting,
            reply.last_update_time_millis,
            owner,
        )
        if owner is not None:
            self.view.observe(view)
        return view

    def _owner(self, caller: Caller, action: Action, posting_id: str) -> str | None:
        if action == Action.CREATE or not caller.operator:
            return caller.employer
        known = self.view.get(posting_id)
        return None if known is None else known.employer
