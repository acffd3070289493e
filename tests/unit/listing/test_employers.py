"""The employer registry: read from its file (the API's and the consumers'), or refused at
start saying why."""

import json

import pytest

from listing.employers import EmployerRegistry
from schemas.enums import Destination


def test_an_employer_registry_is_read_from_its_file_and_a_bad_one_stops_the_start(tmp_path):
    path = tmp_path / "employers.json"
    path.write_text(
        json.dumps(
            {
                "employers": {
                    "acme": {
                        "company_name": "Acme",
                        "linkedin": {"organization": "urn:li:organization:42"},
                        "indeed": {
                            "employer_id": "a-1",
                            "employer_id_type": "ATS_ID",
                            "source_name": "Acme",
                            "country": "FR",
                        },
                    }
                }
            }
        )
    )
    registry = EmployerRegistry.load(path)
    acme = registry.get("acme")
    assert (
        acme is not None
        and acme.linkedin is not None
        and acme.linkedin.organization == "urn:li:organization:42"
    )
    assert registry.get("default") is None
    path.write_text(
        json.dumps({"employers": {"acme": {"company_name": "Acme", "linkedin": {"organization": "acme"}}}})
    )
    with pytest.raises(ValueError, match=r"(?s)employer registry .*linkedin\.organization"):
        EmployerRegistry.load(path)


def test_an_employer_known_on_one_board_has_no_identity_on_the_other(tmp_path):
    path = tmp_path / "employers.json"
    path.write_text(
        json.dumps(
            {
                "employers": {
                    "acme": {"company_name": "Acme", "linkedin": {"organization": "urn:li:organization:42"}}
                }
            }
        )
    )
    registry = EmployerRegistry.load(path)
    assert registry.identity("acme", Destination.LINKEDIN) is not None
    assert registry.identity("acme", Destination.INDEED) is None
    assert registry.identity("globex", Destination.LINKEDIN) is None
