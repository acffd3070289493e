"""What a job board needs of a posting to list it, written once per board and shared by the
API (which refuses, when a posting is written, what a board it targets would refuse) and by
the board consumers (which never send what a board cannot take). Pure: no I/O beyond the
employer registry's file, no Kafka, no HTTP. The sandbox never imports it: it is written from
the boards' documents separately, so that it can catch what these rules miss.

- `problems`: the problem type every rule answers with (board, pointer, code, detail);
- `employers`: who each employer is on each board;
- `linkedin_rules`, `indeed_rules`: each board's requirements;
- `description`: HTML cleaned to an allow-list, and the text a reader sees;
- `places`, `iso`: the free-text location of older clients, ISO 3166 and 4217.
"""

from __future__ import annotations

from collections.abc import Callable

from listing import indeed_rules, linkedin_rules
from listing.employers import EmployerRegistry
from listing.problems import Problem
from schemas.enums import Destination
from schemas.model import Posting

Rules = Callable[[Posting, str, EmployerRegistry], list[Problem]]
RULES: dict[Destination, Rules] = {
    Destination.LINKEDIN: linkedin_rules.problems,
    Destination.INDEED: indeed_rules.problems,
}


def problems_by_board(
    posting: Posting, employer: str, registry: EmployerRegistry
) -> dict[Destination, list[Problem]]:
    """Each board the posting targets, with what that board would refuse in it (empty: it
    would list it), in the order of `posting.boards`."""
    return {board: RULES[board](posting, employer, registry) for board in posting.boards}


def problems(posting: Posting, employer: str, registry: EmployerRegistry) -> list[Problem]:
    """What the boards the posting targets would refuse, board by board."""
    return [p for found in problems_by_board(posting, employer, registry).values() for p in found]
