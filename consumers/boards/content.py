"""A posting as a board is sent it, whichever board: a record from before `locations` and
`apply_url` (schema v1-v3) completed from its employer's registry entry, and the shared
rules of what the board lists (`listing`), checked before anything is built, so an old
record the board would refuse is refused here in the rules' words (never with a server's
path or a setting's name), and never sent."""

from __future__ import annotations

import dataclasses

import nh3

from consumers.boards.base import Rejected
from listing import places
from listing.employers import Employer
from listing.problems import Problem
from schemas.enums import DescriptionFormat
from schemas.model import Posting, PostingUpdate


def completed(update: PostingUpdate, employer: Employer) -> Posting:
    """The posting with what a record from before v4 lacks taken from its employer: the apply
    URL, and a location (its free text, or the employer's) when it names one place for sure
    ("Berlin, Germany"); otherwise the free text stays, for the adapter to send as it is."""
    posting = update.posting
    changes: dict[str, object] = {}
    if not posting.apply_url and employer.apply_url:
        changes["apply_url"] = employer.apply_url
    if not posting.locations:
        text = posting.location or employer.location
        place = places.structured(text) if text else None
        if place is not None:
            changes["locations"] = (place,)
        elif text and not posting.location:
            changes["location"] = text
    return dataclasses.replace(posting, **changes) if changes else posting  # type: ignore[arg-type]


def refused(problems: list[Problem]) -> Rejected | None:
    """The rules' problems as the element's refusal (None: none)."""
    if not problems:
        return None
    return Rejected(" ".join(f"{p.detail} ({p.code.value} at {p.pointer or '/'})" for p in problems))


def html_for(posting: Posting, tags: frozenset[str]) -> str:
    """The description as a board renders it: HTML reduced to the board's tags (nh3: the
    others are removed, their text kept), or the plain text as written."""
    if posting.description_format != DescriptionFormat.HTML:
        return posting.description
    return nh3.clean(posting.description, tags=set(tags), attributes={}, link_rel=None)
