"""HTTP calls to the boards (and the index): which answers are worth another try, and the
TLS a client verifies servers with."""

from __future__ import annotations

import ssl
from pathlib import Path


def retryable_status(status: int) -> bool:
    """408 Request Timeout, 429 Too Many Requests and every 5xx: the same request may
    succeed later. Every other 4xx is a refusal of the request itself."""
    return status in (408, 429) or status >= 500


def client_tls(ca_bundle: Path | None = None) -> ssl.SSLContext:
    """What an HTTPS client verifies servers with: the system's CAs, or only the CAs of
    `ca_bundle` (a PEM file) when given, as a company's TLS-inspecting proxy or a private
    CA needs; host names are checked either way."""
    if ca_bundle is not None and not ca_bundle.is_file():
        raise FileNotFoundError(f"no CA bundle at {ca_bundle}")
    return ssl.create_default_context(cafile=str(ca_bundle) if ca_bundle else None)
