"""LinkedIn's location formats as the sandbox reads them: the form, not a gazetteer."""

from __future__ import annotations

import pytest

from jobpost_dev.sandbox.linkedin.locations import alternate_in_format, in_format


@pytest.mark.parametrize(
    ("location", "remote"),
    [
        ("San Francisco, CA", False),  # CITY, STATE (create-jobs' sample)
        ("Austin, Texas", False),
        ("Toronto, Ontario", False),  # CITY, PROVINCE
        ("Berlin, Germany", False),  # CITY, COUNTRY
        ("New York, NY, USA", False),  # CITY, STATE, COUNTRY
        ("London, England, GB", False),
        ("São Paulo, São Paulo, BR", False),
        ("Val-d'Or, Quebec", False),
        ("St. Louis, Missouri", False),
        ("94043, US", False),  # POSTALCODE, COUNTRYCODE
        ("EC2A 4BX, GB", False),
        ("Germany", True),  # COUNTRY, for a Remote job
        ("DE", True),
        ("Berlin, Germany", True),  # City and Country
    ],
)
def test_a_location_in_one_of_linkedins_formats(location, remote):
    assert in_format(location, remote)


@pytest.mark.parametrize(
    ("location", "remote"),
    [
        ("Remote", False),
        ("Remote", True),  # a workplace type, not a place
        ("Germany", False),  # a country alone is for Remote jobs only
        ("Berlin", False),  # a city alone
        ("Austin, Texas", True),  # a Remote job names its country
        ("Remote, US", False),
        ("1 Main Street, Austin", False),
        ("94043, USA", False),  # a postal code goes with a two-letter code
        ("94043, ZZ", False),
        ("Austin, Texas, Narnia", False),
        ("A, B, C, D", False),
        ("Austin,, US", False),
        ("", False),
    ],
)
def test_a_location_out_of_linkedins_formats(location, remote):
    assert not in_format(location, remote)


def test_an_alternate_location_may_be_a_us_city_alone_not_a_country_alone_unless_remote():
    assert alternate_in_format("Dallas", False) and alternate_in_format("Lyon, France", False)
    assert not alternate_in_format("Anywhere", False) and not alternate_in_format("Dallas 75201", False)
    assert not alternate_in_format("FR", False) and not alternate_in_format("France", False)
    assert alternate_in_format("FR", True)
