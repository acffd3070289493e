"""The one gate: who may call a route is declared on the route and checked here, before any
of the request's body is read.

A route declares the scope it needs as its caller dependency, `Requires(scope)` (the
`Reader`, `Writer`, `Operator`, `SnapshotTaker` aliases of `producer_api.http.deps`). The
gate, pure ASGI in front of FastAPI (which reads and parses a body before it runs any
dependency), finds the route a request is for and, when that route declares a scope:
authenticates the bearer token (401), counts the request against the credential's rate
(429), checks the scope (403), and leaves the caller in the request's state, where the
route's dependency takes it. A route that declares none is public: the probes, the docs,
the playground's files. `every_route` and `required` read the routes and their
declarations as the gate does, so a test walks every route of the app and finds the one
that forgot.

Every refusal is counted (`jobpost_api_auth_failures_total{reason}`) and logged (method,
path, client address, reason, and for a 403 the credential's name), never with the token.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.routing import RouteContext, iter_route_contexts
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import Counter
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Receive, Send
from starlette.types import Scope as Asgi

from producer_api.callers import Caller, Scope, Unauthenticated
from producer_api.http.identity import Identity
from producer_api.http.problems import Problem

log = logging.getLogger("jobpost.auth")
AUTH_FAILURES = Counter(
    "jobpost_api_auth_failures_total",
    "Requests refused for who asked: 401 (missing, unknown_token, invalid_jwt, jwt_claims, "
    "jwks_unavailable) or 403 (scope)",
    ["reason"],
)
CALLER = "jobpost.caller"  # the key of the admitted caller in the request's state
# Only so the OpenAPI description names the scheme (the docs' Authorize button); the gate
# reads the header itself.
_bearer = HTTPBearer(
    auto_error=False,
    description="a development token (JOBPOST_API_TOKENS), a token of the credentials file, or an OIDC JWT",
)


@dataclass(frozen=True)
class Requires:
    """A route's declaration, as its dependency: the caller, who holds `scope`."""

    scope: Scope

    async def __call__(
        self,
        request: Request,
        _documented: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Caller:
        caller: Caller | None = request.scope.get("state", {}).get(CALLER)
        if caller is None:  # an app assembled without the gate: the same check, only later
            caller = await admit(request.scope, frozenset({self.scope}))
        if self.scope not in caller.scopes:  # the gate checked the route's; this is the same
            raise _forbidden(request.scope, caller, self.scope)
        return caller


def every_route(routes: Sequence[BaseRoute]) -> list[RouteContext]:
    """The app's routes as requests meet them, in order: those of included routers each with
    its full path and every dependency its routers add (FastAPI keeps an included router as
    one entry of `app.routes`)."""
    return list(iter_route_contexts(routes))


def required(route: BaseRoute | RouteContext) -> frozenset[Scope]:
    """Every scope `route` declares (its own dependencies and its router's); none: public."""
    found: set[Scope] = set()
    pending = [getattr(route, "dependant", None)]
    while pending:
        dependant = pending.pop()
        if dependant is None:
            continue
        if isinstance(dependant.call, Requires):
            found.add(dependant.call.scope)
        pending.extend(dependant.dependencies)
    return frozenset(found)


async def admit(scope: Asgi, needs: frozenset[Scope]) -> Caller:
    """The caller of a request for a route that needs `needs`; a Problem (401, 429, 403) when
    it is not admitted."""
    identity: Identity = scope["app"].state.identity
    token = _bearer_token(scope)
    if token is None:
        raise _unauthorized(scope, "missing", "no bearer token")
    try:
        caller = await identity.caller(token)
    except Unauthenticated as exc:
        raise _unauthorized(scope, exc.reason, str(exc)) from None
    await identity.rate.check(caller.name)
    missing = sorted(needs - caller.scopes)
    if missing:
        raise _forbidden(scope, caller, missing[0])
    return caller


async def charge(request: Request, caller: Caller, requests: int) -> None:
    """Count `requests` more of the caller's credential (a batch's items beyond its first),
    429 when that takes it over its rate."""
    if requests > 0:
        identity: Identity = request.app.state.identity
        await identity.rate.check(caller.name, requests, counted=1)


class Gate:
    """Pure ASGI: a request for a route that declares a scope is admitted (`admit`) before
    the app, and so before its body, is touched; others pass (a public route, or none: the
    router answers 404/405 without reading a body)."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes  # the app's own list, read at the first request (every route included)
        self._table: list[tuple[RouteContext, frozenset[Scope]]] | None = None

    async def __call__(self, scope: Asgi, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (needs := self.needs(scope)):
            try:
                caller = await admit(scope, needs)
            except Problem as refused:
                await refused.response()(scope, receive, send)
                return
            scope.setdefault("state", {})[CALLER] = caller
        await self.app(scope, receive, send)

    def needs(self, scope: Asgi) -> frozenset[Scope]:
        """What the route this request is for declares (none for no route, a public one):
        the first that matches path and method, as the router picks it."""
        if self._table is None:
            self._table = [(route, required(route)) for route in every_route(self.routes)]
        for route, needs in self._table:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return needs
        return frozenset()


def _bearer_token(scope: Asgi) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if kind.lower() == "bearer" and token else None
    return None


def _unauthorized(scope: Asgi, reason: str, why: str) -> Problem:
    AUTH_FAILURES.labels(reason).inc()
    where = f"{scope['method']} {scope['path']} from {_client(scope)}"
    log.warning("401 %s: %s (%s)", where, reason, why, extra={"auth": {"status": 401, "reason": reason}})
    challenge = "Bearer" if reason == "missing" else 'Bearer error="invalid_token"'
    return Problem(
        401, "Unauthorized", "a valid bearer token is required", headers={"WWW-Authenticate": challenge}
    )


def _forbidden(scope: Asgi, caller: Caller, needed: Scope) -> Problem:
    AUTH_FAILURES.labels("scope").inc()
    where = f"{scope['method']} {scope['path']} from {_client(scope)}"
    log.warning(
        "403 %s: the credential %s lacks the scope %s",
        where,
        caller.name,
        needed.value,
        extra={"auth": {"status": 403, "reason": "scope", "credential": caller.name}},
    )
    return Problem(403, "Forbidden", f"the credential {caller.name!r} lacks the scope {needed.value!r}")


def _client(scope: Asgi) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"
