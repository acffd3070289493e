"""Entry point: `jobpost api` (the HTTP API, with a sequencer member unless disabled)."""

from __future__ import annotations

import gc
import sys

import uvicorn

from producer_api.config import ApiSettings
from producer_api.credentials import CredentialsError
from producer_api.http.app import create_app
from producer_api.http.identity import Identity
from producer_api.http.ports import bound
from runtime.topics import check_at_start
from sequencer.config import SequencerSettings


def run_api() -> None:
    settings = ApiSettings()
    if not settings.any_credentials():
        # An API that accepts no token would refuse every request; one with a default
        # token would accept anyone's. Neither is a safe way to start.
        print(
            "error: no credentials: set JOBPOST_API_TOKENS (development tokens), "
            "JOBPOST_API_CREDENTIALS_FILE or JOBPOST_API_OIDC_JWKS_URL",
            file=sys.stderr,
        )
        raise SystemExit(2)
    check_at_start(settings.kafka)
    try:
        identity = Identity.of(settings)
    except (CredentialsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    # The HTTP loop shares the GIL with the sequencer and the Kafka readers: a request that
    # waits for it after a system call waits up to the switch interval (5 ms by default).
    sys.setswitchinterval(0.0005)
    app = create_app(
        settings, SequencerSettings(kafka=settings.kafka) if settings.embedded_sequencer else None, identity
    )
    # The cycle collector holds the GIL while it walks the objects it tracks: with every
    # module, route, model and schema among them, a full collection stopped every request
    # and the sequencer for 25-106 ms under load. They live as long as the process: leave
    # them out of every collection.
    gc.collect()
    gc.freeze()
    # log_config=None: uvicorn logs through the root handler, as JSON lines like the rest.
    # Its own concurrency bound is a backstop above the app's (which answers problem+json):
    # past it uvicorn answers a bare 503 before any of the app runs.
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        access_log=False,
        log_config=None,
        limit_concurrency=settings.max_concurrent_requests + 64,
        timeout_keep_alive=settings.timeout_keep_alive_s,
        timeout_graceful_shutdown=15,
        ssl_certfile=settings.tls_certfile,
        ssl_keyfile=settings.tls_keyfile,
    )
    sockets = None
    if settings.internal_port is not None:  # one server on two sockets: ports.PortSplit says what is where
        sockets = [bound(settings.host, settings.port), bound(settings.internal_host, settings.internal_port)]
    uvicorn.Server(config).run(sockets=sockets)
