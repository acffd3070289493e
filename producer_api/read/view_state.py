"""What the API's views keep per key in their local stores, and the versions this replica
learnt from replies before its follower read them.

A posting's value is a tag, its version and last update time, then (for a live posting)
the PostingUpdate's Avro bytes exactly as read from the log: writing it costs no encoding,
reading its version costs no decoding, and only `get` decodes the text. A deleted posting
keeps no text, only its employer (so it is gone for its owner and does not exist for
anyone else).
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass

from schemas import codec
from schemas.model import Op, Posting, PostingUpdate

_LIVE = b"U"
_DELETED = b"D"
_HEADER = struct.Struct(">qq")  # version, last update time in millis (-1: not known)
_BODY = 1 + _HEADER.size


@dataclass(frozen=True)
class PostingView:
    id: str
    version: int
    deleted: bool
    posting: Posting | None
    last_update_time_millis: int | None
    employer: str | None = None  # None: not known (a tombstone the view saw alone)


def updated(update: PostingUpdate, raw: bytes) -> bytes:
    """The value for a PostingUpdate whose Avro bytes (the record's value) are `raw`."""
    if update.op == Op.DELETED:
        return deleted(update.version, update.last_update_time_millis, update.employer)
    return _LIVE + _HEADER.pack(update.version, update.last_update_time_millis) + raw


def deleted(version: int, last_update_time_millis: int | None, employer: str | None) -> bytes:
    millis = -1 if last_update_time_millis is None else last_update_time_millis
    return _DELETED + _HEADER.pack(version, millis) + (employer or "").encode()


def is_deleted(value: bytes) -> bool:
    return value[:1] == _DELETED


def employer(value: bytes) -> str | None:
    """The employer of a stored value (None: a deleted posting's that was never known)."""
    if value[:1] == _DELETED:
        return value[_BODY:].decode() or None
    return codec.posting_updates().decode(value[_BODY:]).employer


def header(value: bytes) -> tuple[int, int | None]:
    """(version, last update time) of a stored value, without decoding its text."""
    version, millis = _HEADER.unpack_from(value, 1)
    return version, None if millis < 0 else millis


def posting_view(posting_id: str, value: bytes) -> PostingView:
    version, millis = header(value)
    if value[:1] == _DELETED:
        return PostingView(posting_id, version, True, None, millis, value[_BODY:].decode() or None)
    update = codec.posting_updates().decode(value[_BODY:])
    return PostingView(posting_id, version, False, update.posting, millis, update.employer)


class RecentWrites:
    """Versions learnt from replies (read-your-writes) that the follower may not have read
    yet. Each is dropped once the follower applied that version or a newer one; past
    `limit` waiting, the oldest goes first (the follower has long read it by then)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._views: OrderedDict[str, PostingView] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._views)

    def get(self, posting_id: str) -> PostingView | None:
        return self._views.get(posting_id)

    def observe(self, view: PostingView) -> None:
        with self._lock:
            current = self._views.get(view.id)
            if current is None or current.version < view.version:
                self._views[view.id] = view
                self._views.move_to_end(view.id)
                while len(self._views) > self.limit:
                    self._views.popitem(last=False)

    def applied(self, posting_id: str, version: int) -> None:
        if posting_id not in self._views:  # the usual case, without taking the lock
            return
        with self._lock:
            current = self._views.get(posting_id)
            if current is not None and current.version <= version:
                del self._views[posting_id]


def newest(stored: PostingView | None, observed: PostingView | None) -> PostingView | None:
    if observed is None or (stored is not None and stored.version >= observed.version):
        return stored
    return observed
