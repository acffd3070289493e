"""Who an employer is on each board: its LinkedIn organization and its Indeed employer
identity, from a JSON file (`EMPLOYERS_FILE` of the board's settings):

    {"employers": {"acme": {
        "company_name": "Acme Corp",
        "location": "Sunnyvale, California",         # when a posting names none
        "apply_url": "https://careers.acme.example",   # likewise
        "linkedin": {"organization": "urn:li:organization:2414183"},
        "indeed": {"employer_id": "acme-42", "employer_id_type": "EXAMPLE_ATS_EMPLOYER_ID",
                   "source_name": "Acme Corp", "source_type": "Employer", "country": "US"}}}}

LinkedIn needs the company page the job is posted for (`integrationContext`,
urn:li:organization:<id>), Indeed the employer (`employerIds`, whose `type` Indeed gives each
partner) and a `sourceName` per employer (docs.indeed.com/job-sync-api/faq). A board's
requirements a posting does not meet (a location, an apply URL) fall back to the employer's;
an employer the registry has no identity for on a board is refused for that board, never
sent. Without a file, the sandbox's registry: the employer `default` only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError


class LinkedInIdentity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    organization: str = Field(pattern=r"^urn:li:organization:\d+$")


class IndeedIdentity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    employer_id: str = Field(min_length=1)
    employer_id_type: str = Field(min_length=1, description="the identifier type Indeed gave the partner")
    source_name: str = Field(min_length=1)
    source_type: Literal["Employer", "Job Board", "Staffing Agency"] = "Employer"
    country: str = Field(pattern=r"^[A-Z]{2}$", description="the jobs' country, ISO 3166 alpha-2")


class Employer(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    company_name: str = Field(min_length=1)
    location: str | None = None
    apply_url: str | None = None
    linkedin: LinkedInIdentity | None = None
    indeed: IndeedIdentity | None = None


class EmployerRegistry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    employers: dict[str, Employer]
    _source: str = PrivateAttr(default="the built-in sandbox registry")

    @classmethod
    def load(cls, path: Path | None) -> EmployerRegistry:
        """The registry in `path`, or the sandbox's; a file that cannot be read or does not
        fit the format stops the consumer at start, saying why."""
        if path is None:
            return SANDBOX_REGISTRY
        try:
            registry = cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, ValidationError) as exc:
            raise ValueError(f"employer registry {path}: {exc}") from exc
        registry._source = str(path)
        return registry

    @property
    def source(self) -> str:
        return self._source

    def get(self, employer: str) -> Employer | None:
        return self.employers.get(employer)


SANDBOX_REGISTRY = EmployerRegistry(
    employers={
        "default": Employer(
            company_name="jobpost sandbox employer",
            location="San Francisco, California",
            apply_url="https://careers.example.com/jobs",
            linkedin=LinkedInIdentity(organization="urn:li:organization:1"),
            indeed=IndeedIdentity(
                employer_id="default",
                employer_id_type="JOBPOST_EMPLOYER_ID",
                source_name="jobpost sandbox employer",
                country="US",
            ),
        )
    }
)
