"""LinkedIn Job Posting API: `POST /rest/simpleJobPostings` as a Rest.li batch_create.

Every call carries the full posting with `jobPostingOperationType` CREATE, UPDATE or
CLOSE; HTTP 200 answers carry a per-element status (202 accepted, 4xx rejected). A CLOSE
of a job that is closed already answers 409, which counts as done.
"""

from __future__ import annotations

from pathlib import Path

import aiohttp
from pydantic import BaseModel, SecretStr

from consumers.boards import post, unintelligible
from consumers.errors import RejectedError, RetryableError
from runtime.http import retryable_status
from schemas.model import Destination, PostingUpdate


class LinkedInSettings(BaseModel):
    base_url: str = "http://127.0.0.1:8090/linkedin"
    access_token: SecretStr = SecretStr("sandbox")
    version: str = "202410"
    timeout_s: float = 5.0
    ca_bundle: Path | None = None  # trust only these CAs for https (runtime.http.client_tls)


class LinkedInAdapter:
    name = Destination.LINKEDIN

    def __init__(self, client: aiohttp.ClientSession, settings: LinkedInSettings) -> None:
        self.client = client
        self.settings = settings

    async def upsert(self, update: PostingUpdate) -> None:
        await self._post(update, "CREATE" if update.version == 0 else "UPDATE")

    async def close(self, update: PostingUpdate) -> None:
        await self._post(update, "CLOSE")

    async def _post(self, update: PostingUpdate, operation: str) -> None:
        element = {
            "externalJobPostingId": update.posting_id,
            "title": update.posting.title,
            "description": update.posting.description,
            "listedAt": update.last_update_time_millis,
            "jobPostingOperationType": operation,
        }
        response = await post(
            self.client,
            self.name,
            f"{self.settings.base_url}/rest/simpleJobPostings",
            {"elements": [element]},
            {
                "Authorization": f"Bearer {self.settings.access_token.get_secret_value()}",
                "LinkedIn-Version": self.settings.version,
                "X-Restli-Protocol-Version": "2.0.0",
                "x-restli-method": "batch_create",
                "Idempotency-Key": update.idempotency_key,
            },
            self.settings.timeout_s,
        )
        body = response.body
        elements = body.get("elements") if isinstance(body, dict) else None
        if not (isinstance(elements, list) and len(elements) == 1 and isinstance(elements[0], dict)):
            raise unintelligible(self.name, response, "has no single element status")
        status = elements[0].get("status")
        if not isinstance(status, int) or isinstance(status, bool):
            raise unintelligible(self.name, response, "has no numeric element status")
        if status < 300 or (operation == "CLOSE" and status == 409):
            return
        detail = f"linkedin element status {status}: {elements[0].get('error', '')}"
        if retryable_status(status):
            raise RetryableError(detail)
        raise RejectedError(detail)
