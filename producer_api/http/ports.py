"""Which port serves what, when `JOBPOST_API_INTERNAL_PORT` is set: the endpoints an
operator's tools read (`/metrics`, `/readyz`, the documentation and `/openapi.json`) and
the snapshot a new replica copies (`/ops/snapshot`) only there, the API only on the public
port; `/healthz` on both (a load balancer's probe). Without an internal port every endpoint
is on the one port, except the snapshot, which is then served nowhere.
"""

from __future__ import annotations

import socket

from starlette.types import ASGIApp, Receive, Scope, Send

from producer_api.http.problems import Problem

_INTERNAL = ("/metrics", "/readyz", "/openapi.json", "/docs", "/redoc", "/ops/snapshot")
_BOTH = ("/healthz",)


def internal(path: str) -> bool:
    return path in _INTERNAL or path.startswith(("/docs/", "/redoc/"))


class PortSplit:
    """404 for an internal endpoint asked on the public port, and for the API asked on the
    internal one (the socket that took the connection says which port it was)."""

    def __init__(self, app: ASGIApp, internal_port: int) -> None:
        self.app = app
        self.internal_port = internal_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in _BOTH:
            server = scope.get("server") or (None, None)
            on_internal = server[1] == self.internal_port
            if internal(scope["path"]) != on_internal:
                missing = Problem(404, "Not found", "no such endpoint on this port")
                await missing.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)


def bound(host: str, port: int) -> socket.socket:
    """A listening TCP socket, as uvicorn would bind it (SO_REUSEADDR)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
