"""The API deployable without FastAPI (issue 38.4): `bootstrap` builds its parts from the
settings, `start` runs them, and a write and its read go through the same service the routes
use; `stop` lets the embedded member leave its group."""

from __future__ import annotations

import asyncio
import threading

from pydantic import SecretStr

from producer_api.bootstrap import bootstrap
from producer_api.callers import Caller, Scope
from producer_api.config import ApiSettings
from runtime.stores import StateSettings
from tests import postings


def test_a_write_and_its_read_through_the_parts_bootstrap_builds(kafka, tmp_path):
    settings = ApiSettings(kafka=kafka, state=StateSettings(dir=tmp_path), tokens=SecretStr("a-token"))
    caller = Caller("ats-acme", "default", frozenset({Scope.READ, Scope.WRITE}))
    parts = bootstrap(settings)
    assert "sequencer" not in {t.name for t in threading.enumerate()}  # built, not started

    async def scenario() -> tuple[int, str, int]:
        parts.start()
        try:
            # What a load balancer waits for before it sends a write: /readyz?for=writes (the
            # reply reader runs, and the sequencer owns every partition, restored).
            for _ in range(600):
                if (await parts.readiness.report()).capabilities["writes"] is None:
                    break
                await asyncio.sleep(0.1)
            assert (await parts.readiness.report()).capabilities["writes"] is None
            assert parts.sequencer is not None and len(parts.sequencer.status.assigned) == 3
            created = await parts.service.create(caller, postings.posting(1, title="Bootstrapped"), None)
            read = await parts.service.get(caller, created.id, True, 10)
            return created.version, read.posting.title, read.version
        finally:
            await parts.stop()

    assert asyncio.run(scenario()) == (0, "Bootstrapped", 0)
    assert "sequencer" not in {t.name for t in threading.enumerate()}  # it left
