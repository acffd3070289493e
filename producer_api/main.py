"""Entry point: `jobpost api` (the HTTP API, with a sequencer member unless disabled)."""

from __future__ import annotations

import gc
import sys

import uvicorn

from producer_api.config import ApiSettings
from producer_api.http.app import create_app
from runtime.topics import check_at_start
from sequencer.config import SequencerSettings


def run_api() -> None:
    settings = ApiSettings()
    if not settings.token_set():
        # An API that accepts no token would refuse every request; one with a default
        # token would accept anyone's. Neither is a safe way to start.
        print("error: no API token: set JOBPOST_API_TOKENS to one or more comma-separated tokens",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2)
    check_at_start(settings.kafka)
    # The HTTP loop shares the GIL with the sequencer and the Kafka readers: a request that
    # waits for it after a system call waits up to the switch interval (5 ms by default).
    sys.setswitchinterval(0.0005)
    app = create_app(
        settings, SequencerSettings(kafka=settings.kafka) if settings.embedded_sequencer else None
    )
    # The cycle collector holds the GIL while it walks the objects it tracks: with every
    # module, route, model and schema among them, a full collection stopped every request
    # and the sequencer for 25-106 ms under load. They live as long as the process: leave
    # them out of every collection.
    gc.collect()
    gc.freeze()
    # log_config=None: uvicorn logs through the root handler, as JSON lines like the rest.
    uvicorn.run(app, host=settings.host, port=settings.port, access_log=False, log_config=None)
