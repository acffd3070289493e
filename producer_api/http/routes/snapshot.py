"""/ops/snapshot: this replica's local stores, for a new replica to start from
(runtime.snapshots). It holds every employer's postings: operators only."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from producer_api.http.deps import Operator, Settings
from producer_api.http.models import ProblemOut
from runtime.snapshots import snapshot_tar

router = APIRouter(prefix="/ops", tags=["operations"])


@router.get(
    "/snapshot",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/x-tar": {}}, "description": "a tar of checkpoints of every store"},
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope `ops`"},
    },
)
async def snapshot(caller: Operator, settings: Settings) -> StreamingResponse:
    """A consistent copy of each of this replica's local stores (views and sequencer), each
    at the source offset it records; a new replica copies it, then reads what came since."""
    return StreamingResponse(snapshot_tar(settings.state.dir), media_type="application/x-tar")
