"""LinkedIn's location formats (learn.microsoft.com/linkedin/talent/job-postings/api/
job-posting-api-schema, `location`): "CITY, STATE, COUNTRY" · "CITY, STATE" · "CITY,
PROVINCE" · "CITY, COUNTRY" · "POSTALCODE, COUNTRYCODE" · "COUNTRY" (accepted only for
Remote jobs) · "COUNTRY CLUSTER" (accepted only for Remote jobs); "Remote jobs require either
Country only, City and Country, or Country Cluster". `alternateLocations`: "Maximum up to
seven alternate locations", US entries as "City", others as "City, Country/Region".

LinkedIn standardizes what it is given against its own gazetteer, which the sandbox does not
have: it checks the form. A city, state or province is a place name (letters, no digits); a
country is one ISO 3166 knows by name or code; a postal code has a digit. A word that names
no place ("Remote", "Anywhere") is not a city. Country clusters are not named in the
documents, so none is known here: a Remote job names its country."""

from __future__ import annotations

import re

from jobpost_dev.sandbox import iso

APOSTROPHES = "'\u2019"  # "Val-d'Or", typographic or not
PLACE = re.compile(rf"[^\W\d_][^\W\d_ .{APOSTROPHES}()&-]*(?:[ .{APOSTROPHES}()&-]+[^\W\d_]+)*\.?")
POSTAL_CODE = re.compile(r"(?=[^,]*\d)[A-Za-z0-9][A-Za-z0-9 -]{1,9}")
NOT_PLACES = frozenset(
    {
        "remote",
        "anywhere",
        "worldwide",
        "global",
        "home",
        "work from home",
        "wfh",
        "hybrid",
        "on-site",
        "onsite",
        "various",
        "multiple locations",
        "tbd",
        "n/a",
        "none",
        "unknown",
    }
)


def in_format(location: str, remote: bool) -> bool:
    """Whether `location` is in one of LinkedIn's formats for a job that is (or is not) Remote."""
    parts = [part.strip() for part in location.split(",")]
    if not all(parts):
        return False
    if len(parts) == 1:
        return remote and iso.country_named(parts[0]) is not None
    if len(parts) == 2 and _postal_code(parts[0]):
        return iso.is_alpha_2(parts[1])
    if len(parts) == 2:
        second = iso.country_named(parts[1]) is not None if remote else _place(parts[1])
        return _place(parts[0]) and second
    if len(parts) == 3:
        return _place(parts[0]) and _place(parts[1]) and iso.country_named(parts[2]) is not None
    return False


def alternate_in_format(location: str, remote: bool) -> bool:
    """An alternate location: a US "City", a "City, Country/Region", or a location's format
    (a country alone, then, for a Remote job only)."""
    parts = [part.strip() for part in location.split(",")]
    if len(parts) == 1 and iso.country_named(parts[0]) is not None:
        return remote
    if len(parts) in (1, 2) and all(_place(part) for part in parts):
        return True
    return in_format(location, remote)


def _place(text: str) -> bool:
    return PLACE.fullmatch(text) is not None and text.casefold() not in NOT_PLACES


def _postal_code(text: str) -> bool:
    return POSTAL_CODE.fullmatch(text) is not None
