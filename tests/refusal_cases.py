"""The table of what each board refuses: one case per board's rule, as a change to a
listable posting (`tests.postings.body(0)`, Berlin, on site), with the board that refuses
it, the JSON pointer into the body and the stable code. Data only, so that any checker can
be run over it: the API's validation (tests/unit/producer_api/test_listing_api.py), the
boards' rules themselves (tests/unit/listing/test_rules.py), and the sandbox, which must
refuse each case as the real board would.

An employer case is written by `employer`, whose identity `REGISTRY` leaves out on that
board. `boards` narrows the posting to the board under test where the other board would
refuse the same change too (each refuses it under its own case)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from listing.employers import SANDBOX_REGISTRY, EmployerRegistry
from tests.postings import body

LISTABLE = body(0)
DESCRIPTION = str(LISTABLE["description"])


@dataclass(frozen=True)
class RefusalCase:
    name: str
    board: str  # "linkedin" | "indeed"
    pointer: str
    code: str
    changes: dict[str, Any] = field(default_factory=dict)  # to LISTABLE's fields
    employer: str = "default"

    def body(self) -> dict[str, Any]:
        return {**LISTABLE, **self.changes}

    @property
    def id(self) -> str:
        return f"{self.board}-{self.name}"


ONLY_LINKEDIN = {"boards": ["linkedin"]}
ONLY_INDEED = {"boards": ["indeed"]}
BERLIN = {"city": "Berlin", "region": "Berlin", "postal_code": "10115", "country": "DE"}
LYON = {"city": "Lyon", "country": "FR"}
# 25,000 characters at most as written; `&` is sent as `&amp;`, so what LinkedIn gets is longer.
AMPERSANDS = "<p>" + "R&D " * 6_000 + "</p>"
# 65,000 bytes at most at Indeed: 21,700 euro signs are 65,100 bytes in 21,700 characters.
EUROS = DESCRIPTION + " " + "€" * 21_700

LINKEDIN = [
    RefusalCase("description-under-100", "linkedin", "/description", "too_short",
                {"description": "Build streaming pipelines in Python."}),
    RefusalCase("html-description-under-100-visible", "linkedin", "/description", "too_short",
                {"description": "<p><strong>" + "<br>" * 40 + "Build pipelines.</strong></p>",
                 "description_format": "html"}),
    RefusalCase("description-over-25000-as-sent", "linkedin", "/description", "too_long",
                {"description": AMPERSANDS, "description_format": "html"}),
    RefusalCase("apply-url-missing", "linkedin", "/apply_url", "required",
                {"apply_url": None, **ONLY_LINKEDIN}),
    RefusalCase("on-site-location-without-city-or-postal-code", "linkedin", "/locations/0/city",
                "location_format", {"locations": [{"region": "Bavaria", "country": "DE"}], **ONLY_LINKEDIN}),
    RefusalCase("hybrid-location-country-only", "linkedin", "/locations/0/city", "location_format",
                {"locations": [{"country": "DE"}], "workplace": "hybrid", **ONLY_LINKEDIN}),
    RefusalCase("alternate-location-country-only", "linkedin", "/locations/1/city", "location_format",
                {"locations": [BERLIN, {"country": "FR"}], **ONLY_LINKEDIN}),
    RefusalCase("employer-without-linkedin-organization", "linkedin", "", "employer_not_configured",
                employer="indeed-only"),
]  # fmt: skip

INDEED = [
    RefusalCase("title-over-75", "indeed", "/title", "too_long",
                {"title": "Senior Data Engineer, Streaming Platform and Real-Time Analytics Infrastructure"}),
    RefusalCase("description-blank", "indeed", "/description", "required",
                {"description": "   ", **ONLY_INDEED}),
    RefusalCase("description-over-65000-bytes", "indeed", "/description", "too_long",
                {"description": EUROS}),
    RefusalCase("apply-url-missing", "indeed", "/apply_url", "required",
                {"apply_url": None, **ONLY_INDEED}),
    RefusalCase("two-locations", "indeed", "/locations", "too_many", {"locations": [BERLIN, LYON]}),
    RefusalCase("on-site-location-without-city-or-postal-code", "indeed", "/locations/0/city", "required",
                {"locations": [{"region": "Bavaria", "country": "DE"}], **ONLY_INDEED}),
    RefusalCase("salary-zero-in-cents", "indeed", "/salary/min", "must_be_positive",
                {"salary": {"min": 0.004, "currency": "USD", "period": "hour"}}),
    RefusalCase("salary-zero-in-yen", "indeed", "/salary/min", "must_be_positive",
                {"salary": {"min": 0.4, "max": 3000, "currency": "JPY", "period": "hour"}}),
    RefusalCase("employer-without-indeed-identity", "indeed", "", "employer_not_configured",
                employer="linkedin-only"),
]  # fmt: skip

CASES = LINKEDIN + INDEED

# The sandbox's employer `default` (both boards), and one employer missing on each board.
REGISTRY = EmployerRegistry.model_validate(
    {
        "employers": {
            **{name: e.model_dump() for name, e in SANDBOX_REGISTRY.employers.items()},
            "indeed-only": {**SANDBOX_REGISTRY.employers["default"].model_dump(), "linkedin": None},
            "linkedin-only": {**SANDBOX_REGISTRY.employers["default"].model_dump(), "indeed": None},
        }
    }
)
