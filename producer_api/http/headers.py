"""Security headers on every answer, and a Content-Security-Policy for what a browser renders.

The playground (`/ui`) and the API documentation hold or use the caller's token, so no
script runs on them but the files this package serves (no inline script, no other origin),
and no other site may frame them. JSON answers get a policy that allows nothing at all.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_COMMON = "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'"
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    f"connect-src 'self'; {_COMMON}"
)
# Swagger UI and ReDoc set styles from their scripts (ReDoc through <style> elements it
# makes) and ReDoc searches in a worker it starts from a blob: still no inline script.
DOCS_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    f"font-src 'self' data:; connect-src 'self'; worker-src blob:; {_COMMON}"
)
API_POLICY = "default-src 'none'; frame-ancestors 'none'"
_DOCS = ("/docs", "/redoc")


def policy_for(path: str) -> str:
    if path == "/ui" or path.startswith("/ui/"):
        return PAGE_POLICY
    if path.startswith(_DOCS):
        return DOCS_POLICY
    return API_POLICY


class SecurityHeaders:
    """Pure ASGI: adds the headers to the response's start, whatever answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = policy_for(scope["path"])

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = policy
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "no-referrer"
                headers["X-Frame-Options"] = "DENY"
            await send(message)

        await self.app(scope, receive, send_with_headers)
