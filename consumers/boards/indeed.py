"""Indeed Job Sync API: GraphQL `POST /graphql`.

`jobsIngest { createSourcedJobPostings }` upserts by jobPostingId + sourceName;
`expireSourcedJobsBySourcedPostingId` closes. Errors come as HTTP 200 with `errors[]`
(`extensions.code`), rate limiting as 429.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
from pydantic import BaseModel, SecretStr

from consumers.boards import post, unintelligible
from consumers.errors import RejectedError, RetryableError
from schemas.model import Destination, PostingUpdate

UPSERT = """
mutation Upsert($input: CreateSourcedJobPostingsInput!) {
  jobsIngest { createSourcedJobPostings(input: $input) { results { jobPosting { sourcedPostingId } } } }
}"""
EXPIRE = """
mutation Expire($input: ExpireSourcedJobsBySourcedPostingIdInput!) {
  jobsIngest { expireSourcedJobsBySourcedPostingId(input: $input) { results { sourcedPostingId } } }
}"""
REJECTED_CODES = {"BAD_USER_INPUT", "FORBIDDEN", "UNAUTHENTICATED", "GRAPHQL_VALIDATION_FAILED"}


class IndeedSettings(BaseModel):
    base_url: str = "http://127.0.0.1:8090/indeed"
    access_token: SecretStr = SecretStr("sandbox")
    source_name: str = "jobpost"
    timeout_s: float = 5.0  # Indeed recommends 5 s
    ca_bundle: Path | None = None  # trust only these CAs for https (runtime.http.client_tls)


class IndeedAdapter:
    name = Destination.INDEED

    def __init__(self, client: aiohttp.ClientSession, settings: IndeedSettings) -> None:
        self.client = client
        self.settings = settings

    async def upsert(self, update: PostingUpdate) -> None:
        job = {
            "jobPostingId": update.posting_id,
            "sourceName": self.settings.source_name,
            "title": update.posting.title,
            "description": update.posting.description,
            "datePublished": update.last_update_time_millis,
        }
        await self._mutate(UPSERT, {"jobPostings": [job]}, update)

    async def close(self, update: PostingUpdate) -> None:
        ids = {"sourcedPostingIds": [update.posting_id], "sourceName": self.settings.source_name}
        await self._mutate(EXPIRE, ids, update)

    async def _mutate(self, query: str, variables: dict[str, Any], update: PostingUpdate) -> None:
        response = await post(
            self.client,
            self.name,
            f"{self.settings.base_url}/graphql",
            {"query": query, "variables": {"input": variables}},
            {
                "Authorization": f"Bearer {self.settings.access_token.get_secret_value()}",
                "Idempotency-Key": update.idempotency_key,
            },
            self.settings.timeout_s,
        )
        body = response.body
        if not isinstance(body, dict):
            raise unintelligible(self.name, response, "is not a GraphQL answer")
        errors = body.get("errors") or []
        if not errors:
            if not isinstance(body.get("data"), dict):
                raise unintelligible(self.name, response, "has neither data nor errors")
            return
        if not (isinstance(errors, list) and all(isinstance(e, dict) for e in errors)):
            raise unintelligible(self.name, response, "has errors of an unknown shape")
        codes = {str((e.get("extensions") or {}).get("code", "INTERNAL_SERVER_ERROR")) for e in errors}
        detail = f"indeed errors {sorted(codes)}: {errors[0].get('message', '')}"
        if codes & REJECTED_CODES:
            raise RejectedError(detail)
        raise RetryableError(detail)
