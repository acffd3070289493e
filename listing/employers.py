"""Who an employer is on each board: its LinkedIn organization and its Indeed employer
identity, from a JSON file (the API's and each board consumer's `EMPLOYERS_FILE` setting;
the same file for all of them):

    {"employers": {"acme": {
        "company_name": "Acme Corp",
        "location": "Sunnyvale, California",         # records before `locations` that name none
        "apply_url": "https://careers.acme.example",   # likewise, without an apply URL
        "linkedin": {"organization": "urn:li:organization:2414183"},
        "indeed": {"employer_id": "acme-42", "employer_id_type": "EXAMPLE_ATS_EMPLOYER_ID",
                   "source_name": "Acme Corp", "source_type": "Employer", "country": "US"}}}}

LinkedIn needs the company page the job is posted for (`integrationContext`,
urn:li:organization:<id>), Indeed the employer (`employerIds`, whose `type` Indeed gives each
partner) and a `sourceName` per employer (docs.indeed.com/job-sync-api/faq). A posting of an
employer with no identity on a board it targets is refused when it is written
(`listing.linkedin_rules`, `listing.indeed_rules`), and never sent. Indeed's `country` is the
country of records written before postings named theirs. Without a file, the sandbox's
registry: the employer `default` only.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from schemas.enums import Destination

log = logging.getLogger(__name__)


class LinkedInIdentity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    organization: str = Field(pattern=r"^urn:li:organization:\d+$")


class IndeedIdentity(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    employer_id: str = Field(min_length=1)
    employer_id_type: str = Field(min_length=1, description="the identifier type Indeed gave the partner")
    source_name: str = Field(min_length=1)
    source_type: Literal["Employer", "Job Board", "Staffing Agency"] = "Employer"
    country: str | None = Field(
        default=None,
        pattern=r"^[A-Z]{2}$",
        description="ISO 3166 alpha-2: the country of records written before postings named theirs",
    )


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

    @classmethod
    def load(cls, path: Path | None) -> EmployerRegistry:
        """The registry in `path`, or the sandbox's; a file that cannot be read or does not
        fit the format stops the process at start, saying why (to its operator)."""
        if path is None:
            return SANDBOX_REGISTRY
        try:
            registry = cls.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, ValidationError) as exc:
            raise ValueError(f"employer registry {path}: {exc}") from exc
        return registry

    def get(self, employer: str) -> Employer | None:
        return self.employers.get(employer)

    def identity(self, employer: str, board: Destination) -> LinkedInIdentity | IndeedIdentity | None:
        """Who the employer is on `board`, if anyone."""
        known = self.employers.get(employer)
        if known is None:
            return None
        return known.linkedin if board == Destination.LINKEDIN else known.indeed


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


class Employers(Protocol):
    """Where a board consumer finds the registry as it is now."""

    def current(self) -> EmployerRegistry: ...


class FixedEmployers:
    """A registry that does not change (tests, the sandbox's)."""

    def __init__(self, registry: EmployerRegistry) -> None:
        self.registry = registry

    def current(self) -> EmployerRegistry:
        return self.registry


class EmployersFile:
    """The registry in a file, read again when the file changes (its size or modification
    time; looked at once a second at most), so an operator who adds an employer's identity at
    a board need not restart anything: the next version, or a redrive of a letter, uses it. A
    file that no longer reads (half written, invalid) keeps the registry read before, and is
    logged; one that cannot be read at start stops the process (`EmployerRegistry.load`)."""

    CHECK_EVERY_S = 1.0

    def __init__(self, path: Path) -> None:
        self.path = path
        self._seen = self._stamp()
        self.registry = EmployerRegistry.load(path)
        self._checked = time.monotonic()

    def current(self) -> EmployerRegistry:
        now = time.monotonic()
        if now - self._checked >= self.CHECK_EVERY_S:
            self._checked = now
            stamp = self._stamp()
            if stamp != self._seen:
                self._seen = stamp
                try:
                    self.registry = EmployerRegistry.load(self.path)
                    log.info(
                        "employer registry %s read again: %d employers",
                        self.path,
                        len(self.registry.employers),
                    )
                except ValueError as exc:
                    log.error(
                        "employer registry %s changed but does not read; the previous one stays: %s",
                        self.path,
                        exc,
                    )
        return self.registry

    def _stamp(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return (found.st_mtime_ns, found.st_size)


def employers_at(path: Path | None) -> Employers:
    """The registry a board consumer reads: the file at `path`, watched, or the sandbox's."""
    return FixedEmployers(SANDBOX_REGISTRY) if path is None else EmployersFile(path)


def employers_for(given: EmployerRegistry | Employers | None, path: Path | None) -> Employers:
    """What a board adapter reads: the registry or employers it was given (a test's), else
    those of `employers_at(path)`."""
    if isinstance(given, EmployerRegistry):
        return FixedEmployers(given)
    return given or employers_at(path)
