"""What the sequencer keeps of one posting (the value of `jobpost.sequencer-state`, its
compacted changelog), as a type: never the posting's text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemas.enums import _ACTIONS, Action
from schemas.model import DEFAULT_EMPLOYER


@dataclass(frozen=True, slots=True)
class KeyUse:
    """An Idempotency-Key accepted within the window, as the sequencer remembers it: the
    request's action and fingerprint (to recognise a repeat) and the result (to answer it)."""

    key: str
    action: Action
    fingerprint: str
    version: int
    deleted: bool
    last_update_time_millis: int  # when it was accepted

    def matches(self, action: Action, fingerprint: str) -> bool:
        # Records written before fingerprints existed carry none: the action must still match.
        return self.action == action and (not self.fingerprint or self.fingerprint == fingerprint)


@dataclass(frozen=True, slots=True)
class SequencerState:
    """What the sequencer knows of one posting: the value of `jobpost.sequencer-state`.
    `offset` is where its newest version lies in `jobpost.postings` (the same partition),
    so a delete can carry the text without the state holding it."""

    posting_id: str
    version: int
    deleted: bool
    last_update_time_millis: int | None
    offset: int
    keys: tuple[KeyUse, ...] = ()
    employer: str = DEFAULT_EMPLOYER

    def to_avro(self) -> dict[str, Any]:
        return {
            "posting_id": self.posting_id,
            "version": self.version,
            "deleted": self.deleted,
            "last_update_time_millis": self.last_update_time_millis,
            "offset": self.offset,
            "employer": self.employer,
            "keys": [
                {
                    "key": k.key,
                    "action": k.action,
                    "fingerprint": k.fingerprint,
                    "version": k.version,
                    "deleted": k.deleted,
                    "last_update_time_millis": k.last_update_time_millis,
                }
                for k in self.keys
            ],
        }

    @classmethod
    def from_avro(cls, record: dict[str, Any]) -> SequencerState:
        return SequencerState(
            record["posting_id"],
            record["version"],
            record["deleted"],
            record["last_update_time_millis"],
            record["offset"],
            tuple(
                KeyUse(
                    k["key"],
                    _ACTIONS[k["action"]],
                    k["fingerprint"],
                    k["version"],
                    k["deleted"],
                    k["last_update_time_millis"],
                )
                for k in record["keys"]
            ),
            record["employer"],
        )
