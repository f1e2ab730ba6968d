"""The dashboard: a static page served by the API app; its data come from ``/api/v1`` with the viewer's token.

The page shell (HTML, JS, CSS) needs no token, so a browser can load it and ask for one; every
data request then carries it, and the API shows only the studies the token may read.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).resolve().parent / "static"
PREFIX = "/dashboard"
PUBLIC_PATHS = frozenset({"/", PREFIX})  # the redirects to the page
PUBLIC_PREFIX = PREFIX + "/"  # the page and its static files


def install(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    @app.get(PREFIX, include_in_schema=False)
    def to_dashboard() -> RedirectResponse:
        return RedirectResponse(PUBLIC_PREFIX)

    @app.get(PUBLIC_PREFIX, include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount(PREFIX + "/static", StaticFiles(directory=STATIC), name="dashboard-static")
