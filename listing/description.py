"""A description as the boards take it: HTML cleaned to an allow-list of tags by Ammonia
(through nh3, its maintained binding), and the text a reader sees, which is what LinkedIn's
minimum length counts."""

from __future__ import annotations

import html

import nh3

from schemas.enums import DescriptionFormat

# What either board renders (LinkedIn: b strong u i br p ul li; Indeed: b strong em br p ul li
# and headers); the rest is removed at write, keeping its text. No attributes: no links,
# styles or scripts reach a board.
ALLOWED_TAGS = frozenset(
    {"p", "br", "b", "strong", "i", "em", "u", "ul", "ol", "li", *(f"h{n}" for n in range(1, 7))}
)
_NO_ATTRIBUTES: dict[str, set[str]] = {}


def clean(text: str, fmt: DescriptionFormat) -> str:
    """What is stored and sent: plain text as written; HTML cleaned (tags off the allow-list
    removed with their attributes, scripts and styles with their content, entities kept)."""
    if fmt == DescriptionFormat.TEXT:
        return text
    return nh3.clean(text, tags=set(ALLOWED_TAGS), attributes=_NO_ATTRIBUTES, link_rel=None)


def visible(text: str, fmt: DescriptionFormat) -> str:
    """The text a reader sees: HTML without its tags, its entities read."""
    if fmt == DescriptionFormat.TEXT:
        return text
    return html.unescape(nh3.clean(text, tags=set(), attributes=_NO_ATTRIBUTES, link_rel=None))
