"""ISO 3166 countries and ISO 4217 currencies, from pycountry's copy of the standards'
data (Debian's iso-codes), never from a list kept by hand."""

from __future__ import annotations

from functools import cache

import pycountry

# ISO 4217's minor units where they are not 2 (the standard's list; pycountry does not carry
# them). Indeed takes pay in minor units ("$102.50 -> 10250").
_MINOR_UNITS = {
    **dict.fromkeys(
        ("BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV"),
        0,
    ),
    **dict.fromkeys(("XAF", "XOF", "XPF"), 0),
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    "CLF": 4,
    "UYW": 4,
}


def country(code: str) -> str | None:
    """The ISO 3166-1 alpha-2 code `code` names (any case), or None for none."""
    if len(code) != 2 or not code.isascii() or not code.isalpha():
        return None
    found = pycountry.countries.get(alpha_2=code.upper())
    return None if found is None else str(found.alpha_2)


def country_named(text: str) -> str | None:
    """The alpha-2 code of a country written as its name, official name or alpha-2/alpha-3
    code (any case), or None."""
    try:
        return str(pycountry.countries.lookup(text.strip()).alpha_2)
    except LookupError:
        return None


def currency(code: str) -> str | None:
    """The ISO 4217 code `code` names (any case), or None for none."""
    if len(code) != 3 or not code.isascii() or not code.isalpha():
        return None
    found = pycountry.currencies.get(alpha_3=code.upper())
    return None if found is None else str(found.alpha_3)


def minor_units(currency_code: str) -> int:
    """How many decimals the currency's minor unit has (USD 2, JPY 0, KWD 3)."""
    return _MINOR_UNITS.get(currency_code, 2)


@cache
def us_state_codes() -> frozenset[str]:
    """The two-letter codes of the US states and territories ("CA"), which are often also
    a country's code ("CA" is Canada): a "City, CA" names neither for sure."""
    return frozenset(str(s.code).removeprefix("US-") for s in pycountry.subdivisions.get(country_code="US"))
