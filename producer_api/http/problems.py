"""Every HTTP error leaves as application/problem+json (RFC 9457), through these handlers."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

log = logging.getLogger(__name__)
MEDIA_TYPE = "application/problem+json"


class Problem(StarletteHTTPException):
    """An error answer: status, a short title, a detail for this occurrence. An HTTPException,
    so FastAPI passes it through untouched even from inside body parsing."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(status, detail, headers)
        self.status = status
        self.title = title
        self.detail = detail
        self.headers = headers or {}
        self.errors = errors

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": f"https://jobpost.dev/problems/{self.title.lower().replace(' ', '-')}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if self.errors is not None:
            body["errors"] = self.errors
        return body

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers, media_type=MEDIA_TYPE)


def validation_problem(errors: list[dict[str, Any]]) -> Problem:
    return Problem(422, "Invalid request", "the request does not match the API's schema", errors=errors)


def internal_error() -> Problem:
    """A failure of the server: what it says and nothing more (the error itself is logged)."""
    return Problem(500, "Internal error", "the server failed; the error is logged")


def validation_errors(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pydantic's errors as a problem lists them: where, what, which rule (never the input)."""
    return [
        {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors
    ]


def install(app: FastAPI) -> None:
    @app.exception_handler(Problem)
    async def _problem(_request: Request, exc: Problem) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_problem(validation_errors(exc.errors())).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        if exc.status_code == 400:
            # FastAPI's only 400 is a body it cannot parse (bad JSON, bad UTF-8): the contract
            # answers every invalid body with 422.
            return Problem(422, "Invalid request", f"the body is not UTF-8 JSON: {exc.detail}").response()
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed_methods(request))
        titles = {401: "Unauthorized", 404: "Not found", 405: "Method not allowed", 413: "Payload too large"}
        title = titles.get(exc.status_code, "Error")
        return Problem(exc.status_code, title, str(exc.detail), headers=headers).response()

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return internal_error().response()


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette names only the first route's)."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def document(app: FastAPI, problem_schema: str = "ProblemOut") -> None:
    """Describe every error answer in the OpenAPI description as what it is on the wire:
    `application/problem+json` with the problem schema (FastAPI would say application/json,
    and describe its own validation error shape for 422)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            problem = {"schema": {"$ref": f"#/components/schemas/{problem_schema}"}}
            for operations in spec["paths"].values():
                for operation in operations.values():
                    for response in operation.get("responses", {}).values():
                        schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                        if schema.get("$ref", "").endswith(("/ProblemOut", "/HTTPValidationError")):
                            response["content"] = {MEDIA_TYPE: problem}
            for unused in ("HTTPValidationError", "ValidationError"):
                spec.get("components", {}).get("schemas", {}).pop(unused, None)
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
