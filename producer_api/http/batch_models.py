"""The HTTP shapes of `POST /postings:batch`: what a client sends, and what it gets back."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from producer_api.batch import MAX_ITEMS
from producer_api.http.models import DeletedOut, PostingIn, PostingOut, ProblemOut

# Checked item by item (as the single route checks its body), so that a bad posting is that
# item's 422 and not the whole batch's; described as the posting it must be.
PostingBody = Annotated[Any, WithJsonSchema(PostingIn.model_json_schema())]


class BatchItemIn(BaseModel):
    """One write, as the single request would send it: `op` names the method, `id` the path,
    `if_match` and `idempotency_key` the headers, `posting` the body."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["create", "replace", "delete"] = Field(
        description="create: `POST /postings`; replace: `PUT /postings/{id}`; delete: `DELETE /postings/{id}`"
    )
    id: str | None = Field(
        default=None, description="the posting (replace and delete; a create's id follows from its key)"
    )
    if_match: str | None = Field(
        default=None, description='as the If-Match header, e.g. `"3"` (replace and delete)'
    )
    idempotency_key: str | None = Field(
        default=None, description="as the Idempotency-Key header, scoped like it: to the posting and the op"
    )
    posting: PostingBody = Field(default=None, description="the whole posting (create and replace)")


_DESCRIPTION = (
    "Our logistics platform plans and tracks two million parcel deliveries a day. You will design "
    "and run the streaming pipelines that feed its routing and pricing models."
)
_EXAMPLE: dict[str, Any] = {
    "items": [
        {
            "op": "create",
            "idempotency_key": "ats-job-1041",
            "posting": {
                "title": "Senior Data Engineer",
                "description": _DESCRIPTION,
                "locations": [{"city": "Amsterdam", "country": "NL"}],
                "apply_url": "https://careers.example.com/jobs/1041",
            },
        },
        {
            "op": "replace",
            "id": "e3595d39-9dbf-5c81-9e43-d81572df4a36",
            "if_match": '"2"',
            "idempotency_key": "ats-job-1042-r7",
            "posting": {
                "title": "Staff Data Engineer",
                "description": _DESCRIPTION,
                "locations": [{"country": "NL"}],
                "workplace": "remote",
                "apply_url": "https://careers.example.com/jobs/1042",
            },
        },
        {"op": "delete", "id": "0b7c6a52-41d2-5b7e-8f55-2f0c3d9a1e64"},
    ]
}


class BatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [_EXAMPLE]})

    items: list[BatchItemIn] = Field(min_length=1, max_length=MAX_ITEMS)


class BatchItemOut(BaseModel):
    """One item's answer: what the same request alone would have answered."""

    status: int = Field(description="201 created, 200 replaced or deleted, or the problem's status")
    headers: dict[str, str] = Field(
        default_factory=dict, description="the headers it would have carried: Location, ETag, Retry-After"
    )
    posting: PostingOut | DeletedOut | None = Field(default=None, description="on success")
    problem: ProblemOut | None = Field(default=None, description="otherwise, as application/problem+json")


class BatchOut(BaseModel):
    items: list[BatchItemOut] = Field(description="one per item, in the order sent")
