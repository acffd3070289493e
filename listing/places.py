"""The free-text `location` of clients and records before `locations`, read as a structured
location when it can only mean one place: "City, Country" (a country's name or ISO code) or
"City, Region, Country". Anything else ("Remote", "Sunnyvale, CA", a street address) is not
guessed at: the client is told to send `locations`."""

from __future__ import annotations

from listing import iso
from schemas.model import PostingLocation


def structured(text: str) -> PostingLocation | None:
    """The one location `text` means, or None when it does not say for sure."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) not in (2, 3) or not all(parts):
        return None
    city, *region, named = parts
    if any(ch.isdigit() for ch in city):
        return None  # a postal code or a street: the client knows which, we would guess
    if not region and len(named) == 2 and named.upper() in iso.us_state_codes():
        return None  # "Portland, OR": a US state's code, and maybe a country's too
    country = iso.country_named(named)
    if country is None:
        return None
    return PostingLocation(country, city, region[0] if region else None)
