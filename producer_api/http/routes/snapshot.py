"""/ops/snapshot: this replica's local stores, for a new replica to start from
(runtime.snapshots). It holds every employer's postings: served on the internal port only
(`producer_api.http.ports`; without one, nowhere), to a credential with the scope
`ops:snapshot`, and audited."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from producer_api.audit import Audit
from producer_api.http.deps import Settings, SnapshotTaker
from producer_api.http.models import ProblemOut
from runtime.snapshots import MEDIA_TYPE, snapshot_tar
from schemas.audit import AuditAction

router = APIRouter(prefix="/ops", tags=["operations"])
PATH = "/ops/snapshot"


@router.get(
    "/snapshot",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {MEDIA_TYPE: {}},
            "description": "a tar of checkpoints of every store, its last member the SHA-256 of each file",
        },
        401: {"model": ProblemOut, "description": "missing or unknown bearer token"},
        403: {"model": ProblemOut, "description": "the credential lacks the scope `ops:snapshot`"},
        404: {"model": ProblemOut, "description": "asked on the public port (or no internal port is set)"},
    },
)
async def snapshot(request: Request, caller: SnapshotTaker, settings: Settings) -> StreamingResponse:
    """A consistent copy of each of this replica's local stores (views and sequencer), each
    at the source offset it records; a new replica copies it, checks every file against the
    manifest that ends it, then reads what came since."""
    audit: Audit = request.app.state.audit
    client = request.client.host if request.client else "unknown"
    audit.record(caller, AuditAction.SNAPSHOT, detail=f"stores copied to {client}")
    return StreamingResponse(snapshot_tar(settings.state.dir), media_type=MEDIA_TYPE)
