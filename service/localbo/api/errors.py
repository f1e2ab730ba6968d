"""Error answers: every 4xx is JSON ``{"detail": "field: what was expected"}``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError, OperationalError

from localbo.errors import LocalboError

RETRY_AFTER_SECONDS = 1

BODY_PREFIXES = ("body", "query", "path", "header")


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in BODY_PREFIXES and len(parts) > 1:
        parts = parts[1:]
    return ".".join(parts) or "body"


def _message(err: dict[str, Any]) -> str:
    if err.get("type") == "json_invalid":
        ctx = err.get("ctx") or {}
        return f"body: malformed JSON ({ctx.get('error', 'invalid')}) at position {err['loc'][-1]}"
    if err.get("type") == "missing" and list(err["loc"]) == ["body"]:
        return "body: missing; expected a JSON object"
    return f"{_where(tuple(err['loc']))}: {err['msg']}"


def install(app: FastAPI) -> None:
    @app.exception_handler(LocalboError)
    async def _engine_error(_: Request, exc: LocalboError) -> JSONResponse:
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)} if exc.status_code == 503 else None
        return JSONResponse({"detail": exc.message}, status_code=exc.status_code, headers=retry)

    @app.exception_handler(OperationalError)
    async def _database_busy(_: Request, exc: OperationalError) -> JSONResponse:
        """SQLite's "database is locked" past its busy timeout, a lock or serialisation timeout on Postgres:
        the request changed nothing, so the client may retry; anything else is a real server error."""
        text = str(exc.orig).lower()
        if "locked" in text or "lock timeout" in text or "could not serialize" in text or "deadlock" in text:
            return JSONResponse(
                {"detail": "database: busy, nothing was changed; retry"},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        raise exc

    @app.exception_handler(IntegrityError)
    async def _conflict(_: Request, exc: IntegrityError) -> JSONResponse:
        """A concurrent request stored the same row first (a name, a key, a number): nothing of ours was."""
        return JSONResponse(
            {"detail": "conflict: a concurrent request changed the same data first; nothing was changed, retry"},
            status_code=409,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        detail = "; ".join(_message(e) for e in errors[:5])
        fields = [
            {"field": "body" if e.get("type") == "json_invalid" else _where(tuple(e["loc"])), "message": e["msg"]}
            for e in errors
        ]
        return JSONResponse({"detail": detail, "errors": fields}, status_code=422)


class BodySizeLimit:
    """Refuses request bodies over ``limit`` bytes with a 413, before they are parsed.

    A study creation may reach ``create_limit`` (a finite space carries its candidates); the route then
    holds any other creation to ``limit`` (``check_create_size``), so only finite spaces get the room.
    """

    def __init__(self, app: Any, limit: int, create_limit: int | None = None) -> None:
        self.app = app
        self.default_limit = limit
        self.create_limit = create_limit or limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        creating = scope.get("method") == "POST" and scope.get("path", "").rstrip("/") == "/api/v1/studies"
        limit = self.create_limit if creating else self.default_limit
        setting = "LOCALBO_MAX_CREATE_BYTES" if creating else "LOCALBO_MAX_BODY_BYTES"
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return await self._refuse(send, limit, setting)
        seen = 0

        async def limited_receive() -> dict:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                scope.setdefault("state", {})["body_bytes"] = seen
                if seen > limit:
                    # an HTTPException passes through FastAPI's body reader unchanged
                    raise HTTPException(413, self._detail(limit, setting))
            return message

        await self.app(scope, limited_receive, send)

    @staticmethod
    def check_create_size(body_bytes: int | None, limit: int) -> None:
        """A creation whose space is not finite gets the ordinary limit (the middleware allowed the larger one)."""
        if body_bytes is not None and body_bytes > limit:
            raise HTTPException(413, BodySizeLimit._detail(limit, "LOCALBO_MAX_BODY_BYTES"))

    @staticmethod
    def _detail(limit: int, setting: str) -> str:
        return f"body: larger than the limit of {limit} bytes ({setting})"

    async def _refuse(self, send: Any, limit: int, setting: str) -> None:
        await JSONResponse({"detail": self._detail(limit, setting)}, status_code=413)({"type": "http"}, None, send)
