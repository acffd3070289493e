"""The sandbox app in process, on a clock the test moves, reached through plain HTTP calls
(what a board adapter, or the API's refusal table, would send), and jobs as the boards'
documents write them: a LinkedIn element (create-jobs' sample fields) and an Indeed job
(createSourcedJobPostings' input), each one the board takes, to be changed per case."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from jobpost_dev.sandbox import create_sandbox
from jobpost_dev.sandbox.clock import Clock
from jobpost_dev.sandbox.refusals import RefusalLog
from jobpost_dev.sandbox.tokens import SANDBOX_CLIENT_ID, SANDBOX_CLIENT_SECRET

NOW_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z
DAY_S = 86_400
CREDENTIALS = {
    "grant_type": "client_credentials",
    "client_id": SANDBOX_CLIENT_ID,
    "client_secret": SANDBOX_CLIENT_SECRET,
}
TOKEN_PATHS = {"linkedin": "/linkedin/oauth/v2/accessToken", "indeed": "/indeed/oauth/v2/tokens"}
UPSERT = """mutation Upsert($input: CreateSourcedJobPostingsInput!) {
  jobsIngest { createSourcedJobPostings(input: $input) { results { jobPosting { sourcedPostingId } } } }
}"""
EXPIRE = """mutation Expire($input: ExpireSourcedJobsBySourcedPostingIdInput!) {
  jobsIngest { expireSourcedJobsBySourcedPostingId(input: $input) { results { trackingKey } } }
}"""
NODE = """query Status($id: ID!) {
  node(id: $id) { ... on SourcedJobPosting { status { lifecycleStatus isRejected } } }
}"""
DESCRIPTION = (
    "Join the team that settles card and bank payments for forty thousand merchants. As our Backend "
    "Engineer you will build the services that authorise, capture and refund payments."
)
T = TypeVar("T")


class Sandbox:
    """The app, a client for it, and the time it lives in (`t` seconds after NOW_MS)."""

    def __init__(self, refusals: RefusalLog | None = None) -> None:
        self.t = 0.0
        self.clock = Clock(now=lambda: self.t, wall_ms=lambda: NOW_MS + int(self.t * 1000))
        app = create_sandbox(self.clock, refusals or RefusalLog())
        self.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sandbox")
        self.tokens: dict[str, str] = {}

    async def token(self, board: str) -> str:
        if board not in self.tokens:
            answer = await self.http.post(TOKEN_PATHS[board], data=CREDENTIALS)
            assert answer.status_code == 200, answer.text
            self.tokens[board] = answer.json()["access_token"]
        return self.tokens[board]

    async def linkedin(self, *elements: dict[str, Any], token: str | None = None) -> httpx.Response:
        headers = {
            "Authorization": f"Bearer {token or await self.token('linkedin')}",
            "x-restli-method": "batch_create",
            "LinkedIn-Version": "202604",
        }
        return await self.http.post(
            "/linkedin/rest/simpleJobPostings", json={"elements": list(elements)}, headers=headers
        )

    async def elements(self, *elements: dict[str, Any]) -> list[dict[str, Any]]:
        answer = await self.linkedin(*elements)
        assert answer.status_code == 200, answer.text
        return list(answer.json()["elements"])

    async def tasks(self, *ids: str) -> dict[str, Any]:
        answer = await self.http.get(
            "/linkedin/rest/simpleJobPostingTasks",
            params=[("ids", i) for i in ids],
            headers={"Authorization": f"Bearer {await self.token('linkedin')}", "LinkedIn-Version": "202604"},
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def task(self, task_id: str) -> dict[str, Any]:
        return dict((await self.tasks(task_id))["results"][task_id])

    async def listing(self, *external_ids: str) -> dict[str, Any]:
        answer = await self.http.get(
            "/linkedin/v2/jobPostingStatus",
            params=[("ids", i) for i in external_ids],
            headers={"Authorization": f"Bearer {await self.token('linkedin')}"},
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def graphql(
        self, query: str, variables: dict[str, Any], token: str | None = None
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or await self.token('indeed')}"}
        return await self.http.post(
            "/indeed/graphql", json={"query": query, "variables": variables}, headers=headers
        )

    async def upsert(self, *jobs: dict[str, Any]) -> dict[str, Any]:
        answer = await self.graphql(UPSERT, {"input": {"jobPostings": list(jobs)}})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def expire(self, *sourced_ids: str) -> dict[str, Any]:
        jobs = [{"sourcedPostingId": i} for i in sourced_ids]
        answer = await self.graphql(EXPIRE, {"input": {"jobs": jobs}})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def node(self, sourced_id: str) -> Any:
        answer = await self.graphql(NODE, {"id": sourced_id})
        assert answer.status_code == 200, answer.text
        return answer.json()["data"]["node"]

    async def get(self, path: str, **params: Any) -> Any:
        answer = await self.http.get(path, params=params)
        assert answer.status_code == 200, answer.text
        return answer.json()

    async def put(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return await self.http.put(path, json=body)

    async def advance_clock(self, seconds: float) -> None:
        """Move the sandbox's clock; the tokens held end as they would (a client takes new ones)."""
        answer = await self.put("/_sandbox/clock", {"advance_s": seconds})
        assert answer.status_code == 200, answer.text
        self.tokens.clear()


def scenario(body: Callable[[Sandbox], Awaitable[T]], refusals: RefusalLog | None = None) -> T:
    async def main() -> T:
        sandbox = Sandbox(refusals)
        async with sandbox.http:
            return await body(sandbox)

    return asyncio.run(main())


def element(posting_id: str = "p1", operation: str = "CREATE", **changes: Any) -> dict[str, Any]:
    """A LinkedIn job LinkedIn lists; `changes` replace fields, None removes one."""
    made = {
        "integrationContext": "urn:li:organization:2414183",
        "companyApplyUrl": f"https://careers.example.com/jobs/{posting_id}",
        "externalJobPostingId": posting_id,
        "jobPostingOperationType": operation,
        "title": "Backend Engineer, Payments",
        "description": DESCRIPTION,
        "listedAt": NOW_MS - 60_000,
        "location": "Austin, Texas, US",
        "workplaceTypes": ["On-site"],
        "employmentStatus": "FULL_TIME",
        "listingType": "BASIC",
    }
    return {k: v for k, v in {**made, **changes}.items() if v is not None}


def indeed_job(posting_id: str = "p1", **changes: Any) -> dict[str, Any]:
    """An Indeed job Indeed takes; `changes` set paths (`body__title=…`), None removes one."""
    made: dict[str, Any] = {
        "body": {
            "title": "Backend Engineer, Payments",
            "description": DESCRIPTION,
            "descriptionFormatting": "TEXT",
            "location": {"country": "US", "cityRegionPostal": "Austin, Texas 78701"},
            "benefits": [],
            "salary": {
                "currency": "USD",
                "minimumMinor": 9_000_000,
                "maximumMinor": 12_000_000,
                "period": "YEAR",
            },
        },
        "metadata": {
            "jobSource": {
                "companyName": "Example Payments",
                "sourceName": "Example Payments",
                "sourceType": "Employer",
                "employerIds": [{"type": "ATS", "id": "example-payments"}],
            },
            "jobPostingId": posting_id,
            "datePublished": "2023-11-14T22:12:20.000Z",
            "url": f"https://careers.example.com/jobs/{posting_id}",
        },
    }
    for path, value in changes.items():
        *parents, name = path.split("__")
        record = made
        for parent in parents:
            record = record[parent]
        if value is None:
            record.pop(name, None)
        else:
            record[name] = copy.deepcopy(value)
    return made
