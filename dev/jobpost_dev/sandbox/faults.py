"""The faults a test switches on for one board (`PUT /_sandbox/{board}/faults`), and the
answers a misbehaving board or a proxy in front of it gives."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Literal

from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.types import Receive, Scope, Send

Mode = Literal["none", "error", "timeout", "rate_limit", "reject", "lose_response", "malformed", "outage"]

# Modes a posting-targeted fault (`posting_ids`) applies to the targeted elements only: the
# rest of the batch is applied, as a board that refuses one job of a batch does.
ELEMENT_MODES = frozenset({"error", "reject"})


class FaultRule(BaseModel):
    mode: Mode
    probability: float = Field(default=1.0, ge=0, le=1)


class Faults(BaseModel):
    mode: Mode = "none"
    probability: float = Field(default=1.0, ge=0, le=1)
    latency_ms: int = Field(default=0, ge=0)
    retry_after_s: int = Field(default=1, ge=0)
    posting_ids: list[str] | None = Field(
        default=None, description="only calls carrying these postings (default: all); `outage` ignores it"
    )
    also: list[FaultRule] = Field(
        default_factory=list, description="more faults at once, each with its own probability"
    )

    def rules(self) -> list[FaultRule]:
        return [FaultRule(mode=self.mode, probability=self.probability), *self.also]

    def draw(self, exclude: Iterable[str] = ()) -> str:
        """The fault this call (or element) meets: the first rule whose chance comes up."""
        skipped = set(exclude)
        for rule in self.rules():
            if rule.mode not in ("none", *skipped) and random.random() < rule.probability:
                return rule.mode
        return "none"

    def outage(self) -> bool:
        return any(r.mode == "outage" and random.random() < r.probability for r in self.rules())

    def targets(self, posting_id: str) -> bool:
        return self.posting_ids is None or posting_id in self.posting_ids

    def call_fault(self, posting_ids: Iterable[str]) -> str:
        """The fault of a whole call: untargeted faults hit every call, targeted ones the
        calls that carry a targeted posting. Element modes of a targeted fault are left to
        `element_fault`."""
        ids = list(posting_ids)
        if self.posting_ids is None:
            return self.draw(exclude=("outage",))
        if any(self.targets(p) for p in ids):
            return self.draw(exclude=("outage", *ELEMENT_MODES))
        return "none"

    def element_fault(self, posting_id: str) -> str:
        """`reject` or `error` for one element of a targeted fault, else none."""
        if self.posting_ids is None or posting_id not in self.posting_ids:
            return "none"
        mode = self.draw(exclude=("outage",))
        return mode if mode in ELEMENT_MODES else "none"


# What a misbehaving board or a proxy in front of it answers with a 200: an HTML page,
# truncated JSON, text in another charset, JSON of another shape. Nothing is applied.
MALFORMED_ANSWERS = (
    (b"<html><body><h1>Service temporarily unavailable</h1></body></html>", "text/html"),
    (b'{"elements": [{"status": 2', "application/json"),
    ('{"message": "\u00e9t\u00e9 r\u00e9ussi"}'.encode("latin-1"), "application/json"),
    (b'{"unexpected": ["shape"]}', "application/json"),
    (b"[]", "application/json"),
)


def malformed() -> Response:
    content, media_type = random.choice(MALFORMED_ANSWERS)
    return Response(content, 200, media_type=media_type)


class LostResponse(Response):
    """Starts a response, then drops the connection before the body: the request was
    applied but the client never learns it."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1000")]})
        raise ConnectionAbortedError("sandbox: response lost on purpose")
