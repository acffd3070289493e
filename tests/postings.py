"""Real-looking postings, the one source of them for every test, benchmark and example:
job titles and ads that read like ads (descriptions well over LinkedIn's 100 characters),
real cities with their regions, postal codes and countries, https apply URLs on an example
domain, employment types, sometimes a salary. Deterministic from an index, so a test that
asks for posting 7 gets the same one every run, and two indices give two different postings.

- `body(i, **changes)`: the JSON body of `POST /postings` (`changes` replace its fields; a
  change to `ABSENT` leaves the field out);
- `posting(i, **changes)`: the same posting as the record type (`schemas.model.Posting`);
- `update(posting_id, version, i, ...)`: a `PostingUpdate` carrying it;
- `employers_document(*names)`: an employer registry (JSON) in which each of `names` has the
  sandbox employer's identities at both boards, for tests that write as other employers.

Each one is listable at both boards for the sandbox's employer `default` (a unit test runs
the boards' rules over the first few hundred)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from listing.employers import SANDBOX_REGISTRY
from schemas.enums import DescriptionFormat, EmploymentType, SalaryPeriod, Workplace
from schemas.model import Op, Posting, PostingLocation, PostingUpdate, Salary

ABSENT: Any = object()

# (title, what the team does, what the job is): every description is built from these.
JOBS = [
    ("Senior Data Engineer", "moves every order, payment and delivery event through Kafka",
     "design streaming pipelines in Python and SQL and own their reliability"),
    ("Backend Engineer, Payments", "settles card and bank payments for forty thousand merchants",
     "build the services that authorise, capture and refund payments"),
    ("Site Reliability Engineer", "keeps the checkout and search platforms available around the clock",
     "automate deployments, tune Kubernetes clusters and lead incident reviews"),
    ("Product Designer", "shapes the mobile apps used by two million shoppers",
     "turn research into flows, prototypes and a consistent design system"),
    ("Registered Nurse, Cardiology", "cares for patients before and after heart surgery",
     "assess patients, give medication and coordinate care with the surgical team"),
    ("Warehouse Team Lead", "ships fifteen thousand parcels a day from our fulfilment centre",
     "plan shifts, coach a team of twelve and keep every dock safe and on time"),
    ("Machine Learning Engineer", "ranks products and predicts demand for every store",
     "train, evaluate and serve models, and measure their effect in experiments"),
    ("Customer Success Manager", "helps logistics companies get the most out of our platform",
     "onboard new customers, run quarterly reviews and turn feedback into product requests"),
    ("Electrician", "maintains the production lines of our bottling plant",
     "install, inspect and repair electrical systems to the current safety standards"),
    ("Frontend Engineer", "builds the booking pages that travellers use on every device",
     "write accessible TypeScript and React and keep the pages fast"),
    ("Financial Controller", "closes the books of twelve subsidiaries every month",
     "prepare consolidated reports, improve controls and work with the auditors"),
    ("Mobile Engineer, Android", "ships the delivery app our couriers use on every shift",
     "write Kotlin, profile battery and network use and release every two weeks"),
]  # fmt: skip

# (city, region, postal code, country): real places, one country each.
PLACES = [
    ("Berlin", "Berlin", "10115", "DE"),
    ("Amsterdam", "North Holland", "1012", "NL"),
    ("London", "England", "EC2A 4BX", "GB"),
    ("Austin", "Texas", "78701", "US"),
    ("Toronto", "Ontario", "M5V 2T6", "CA"),
    ("Lyon", "Auvergne-Rhône-Alpes", "69002", "FR"),
    ("Barcelona", "Catalonia", "08002", "ES"),
    ("Dublin", "Leinster", "D02 X285", "IE"),
    ("Stockholm", "Stockholm County", "111 20", "SE"),
    ("Sydney", "New South Wales", "2000", "AU"),
    ("Zürich", "Zürich", "8001", "CH"),
    ("São Paulo", "São Paulo", "01310-100", "BR"),
    ("Tokyo", "Tokyo", "100-0005", "JP"),
]
CURRENCIES = {
    "DE": "EUR",
    "NL": "EUR",
    "GB": "GBP",
    "US": "USD",
    "CA": "CAD",
    "FR": "EUR",
    "ES": "EUR",
    "IE": "EUR",
    "SE": "SEK",
    "AU": "AUD",
    "CH": "CHF",
    "BR": "BRL",
    "JP": "JPY",
}
EMPLOYMENT = [EmploymentType.FULL_TIME] * 5 + [EmploymentType.PART_TIME, EmploymentType.CONTRACT]
WORKPLACES = [Workplace.ON_SITE, Workplace.HYBRID, Workplace.ON_SITE, Workplace.HYBRID, Workplace.REMOTE]


def posting(index: int = 0, **changes: Any) -> Posting:
    """Posting number `index`, with `changes` to its fields (`schemas.model.Posting`'s names)."""
    title, team, job = JOBS[index % len(JOBS)]
    city, region, postal_code, country = PLACES[index % len(PLACES)]
    workplace = WORKPLACES[index % len(WORKPLACES)]
    place = (
        PostingLocation(country)
        if workplace == Workplace.REMOTE
        else PostingLocation(country, city, region, postal_code)
    )
    where = f"from anywhere in {country}" if workplace == Workplace.REMOTE else f"in {city}"
    description = (
        f"Join the team that {team}. As our {title} you will {job}. You work {where} with a "
        f"small team that ships every week. We offer 30 days of paid leave, a learning budget and "
        f"flexible hours. Reference {index:05d}."
    )
    made = Posting(
        title=title,
        description=description,
        notes=f"requisition R-{index:05d}",
        apply_url=f"https://careers.example.com/jobs/{index:05d}-{_slug(title)}",
        description_format=DescriptionFormat.TEXT,
        locations=(place,),
        workplace=workplace,
        employment_type=EMPLOYMENT[index % len(EMPLOYMENT)],
        salary=_salary(index, country),
    )
    return dataclasses.replace(made, **changes)


def body(index: int = 0, **changes: Any) -> dict[str, Any]:
    """Posting number `index` as the JSON body of `POST /postings` (the API's field names
    and spellings), with `changes` replacing fields; `ABSENT` leaves one out."""
    made = posting(index)
    fields: dict[str, Any] = {
        "title": made.title,
        "description": made.description,
        "notes": made.notes,
        "locations": [
            {name: value for name, value in dataclasses.asdict(place).items() if value is not None}
            for place in made.locations
        ],
        "workplace": made.workplace.value.lower(),
        "employment_type": made.employment_type.value.lower(),
        "apply_url": made.apply_url,
    }
    if made.salary is not None:
        salary = made.salary
        fields["salary"] = {
            "min": salary.min,
            "max": salary.max,
            "currency": salary.currency,
            "period": salary.period.value.lower(),
        }
    fields.update(changes)
    return {name: value for name, value in fields.items() if value is not ABSENT}


def update(
    posting_id: str,
    version: int = 0,
    index: int = 0,
    op: Op | None = None,
    *,
    employer: str = "default",
    at: int = 1_700_000_000_000,
    **changes: Any,
) -> PostingUpdate:
    """A `PostingUpdate` of `posting_id` at `version` carrying posting number `index`."""
    return PostingUpdate(
        posting_id=posting_id,
        version=version,
        op=op or (Op.CREATED if version == 0 else Op.UPDATED),
        idempotency_key=f"{posting_id}:{version}",
        request_id=f"request-{posting_id}-{version}",
        posting=posting(index, **changes),
        last_update_time_millis=at,
        accepted_at=at,
        employer=employer,
    )


def _salary(index: int, country: str) -> Salary | None:
    if index % 3:
        return None  # most ads name no salary
    currency = CURRENCIES[country]
    base = 55_000 + 5_000 * (index % 7)
    if currency == "JPY":
        return Salary(float(base * 150), currency, SalaryPeriod.YEAR, float(base * 190))
    return Salary(float(base), currency, SalaryPeriod.YEAR, float(base + 20_000))


def _slug(title: str) -> str:
    return "-".join("".join(ch for ch in word if ch.isalnum()) for word in title.lower().split())


def employers_document(*names: str) -> str:
    """An employer registry file's JSON: `default`, and each of `names` as the sandbox's
    employer is at both boards (its own name and ids)."""
    sandbox = SANDBOX_REGISTRY.employers["default"].model_dump()
    employers = {"default": sandbox}
    for name in names:
        employer = json.loads(json.dumps(sandbox))
        employer["company_name"] = employer["indeed"]["source_name"] = f"{name.title()} Inc."
        employer["indeed"]["employer_id"] = name
        employers[name] = employer
    return json.dumps({"employers": employers})
