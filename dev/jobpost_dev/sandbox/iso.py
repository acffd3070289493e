"""ISO 3166 countries and ISO 4217 currencies as the boards name them, from pycountry's copy
of the standards (Debian's iso-codes): data, not rules, so the sandbox shares nothing with
the product's checks but the standards themselves."""

from __future__ import annotations

from functools import cache

import pycountry

# Short names people and ATSs write that ISO does not list as a name or code.
_ALSO = {"UK": "GB", "U.K.": "GB", "USA": "US", "U.S.": "US", "U.S.A.": "US"}


def is_alpha_2(code: str) -> bool:
    """An ISO 3166-1 alpha-2 code as written ("US", "DE"): two upper-case letters of a country."""
    return len(code) == 2 and code.isupper() and pycountry.countries.get(alpha_2=code) is not None


def is_currency(code: str) -> bool:
    """An ISO 4217 code as written ("USD", "JPY")."""
    return len(code) == 3 and code.isupper() and pycountry.currencies.get(alpha_3=code) is not None


@cache
def _country_names() -> dict[str, str]:
    names: dict[str, str] = {}
    for country in pycountry.countries:
        for attribute in ("alpha_2", "alpha_3", "name", "common_name", "official_name"):
            value = getattr(country, attribute, None)
            if value:
                names[str(value).casefold()] = str(country.alpha_2)
    names.update({alias.casefold(): code for alias, code in _ALSO.items()})
    return names


def country_named(text: str) -> str | None:
    """The alpha-2 code of the country `text` names (its name, official or common name, or
    alpha-2 or alpha-3 code, in any case), or None."""
    return _country_names().get(text.strip().casefold())
