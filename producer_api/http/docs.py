"""The API's documentation pages, served from this process: Swagger UI at `/docs`, ReDoc
at `/redoc`, their scripts and styles from the `fastapi-offline` wheel (Swagger UI 5 and
ReDoc 2 bundles, MIT licence, under `/docs/assets/`), nothing from a CDN. FastAPI's own
pages start Swagger UI with an inline script, which the pages' Content-Security-Policy
forbids; these load a small script of this package instead (`docs_page/`). The one thing
ReDoc's bundle fetches from elsewhere, the Redocly logo of its sidebar
(`https://cdn.redoc.ly/...`), is replaced by an empty image as the bundle is served.
`JOBPOST_API_DOCS=false` serves neither page nor `/openapi.json`.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

_OWN = Path(__file__).parent / "docs_page"
_BUNDLES = Path(str(files("fastapi_offline") / "static"))
_REDOC_BUNDLE = "redoc.standalone.js"
_REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
_EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E"

_SWAGGER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jobpost API - Swagger UI</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui" data-openapi="/openapi.json"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/page/swagger-start.js"></script></body></html>
"""
_REDOC = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jobpost API - ReDoc</title></head>
<body><redoc spec-url="/openapi.json"></redoc>
<script src="/docs/assets/redoc.standalone.js"></script></body></html>
"""


def install(app: FastAPI) -> None:
    redoc_bundle = (_BUNDLES / _REDOC_BUNDLE).read_text(encoding="utf-8").replace(_REDOCLY_LOGO, _EMPTY_IMAGE)

    @app.get(f"/docs/assets/{_REDOC_BUNDLE}", include_in_schema=False)
    async def redoc_bundle_from_here() -> Response:  # before the mount: this one is served
        return Response(redoc_bundle, media_type="text/javascript")

    app.mount("/docs/assets", StaticFiles(directory=_BUNDLES), name="docs-assets")
    app.mount("/docs/page", StaticFiles(directory=_OWN), name="docs-page")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return HTMLResponse(_SWAGGER)

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return HTMLResponse(_REDOC)
