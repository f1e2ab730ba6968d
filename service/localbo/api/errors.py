"""Error answers: every 4xx is JSON ``{"detail": "field: what was expected"}`` (``ErrorOut``), and the
``responses=`` that document them on each route."""

from __future__ import annotations

import codecs
import re
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from localbo.api.schemas import ErrorOut
from localbo.errors import LocalboError
from localbo.json_values import field_path

RETRY_AFTER_SECONDS = 1

BODY_PREFIXES = ("body", "query", "path", "header")


def _where(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    if parts and parts[0] in BODY_PREFIXES and len(parts) > 1:
        parts = parts[1:]
    return field_path(parts) or "body"


WHY = {
    400: "The body is not UTF-8 JSON",
    401: "No token, or an unknown one (only when tokens are configured)",
    403: "The token may not read or write this study",
    404: "No such study or trial",
    409: "A conflict: the name exists, the trial is finished, or a concurrent request came first",
    413: "The body is larger than the limit",
    415: "The body's charset is not UTF-8",
    422: "Input that does not fit: the detail names the field and what was expected",
    503: "Busy (the database, or the study's plan); nothing was changed; retry after Retry-After",
}
READ = (401, 403, 404, 422, 503)  # any route of /api/v1 on a study
WRITE = (400, 401, 403, 404, 409, 413, 415, 422, 503)  # a route that takes a body


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: each error it may answer, with the one error schema."""
    return {code: {"model": ErrorOut, "description": WHY[code]} for code in codes}


def conflict(why: str) -> dict[int | str, dict[str, Any]]:
    """A route's own 409, said in its own words (``responses(*READ) | conflict(...)``)."""
    return {409: {"model": ErrorOut, "description": why}}


def _text(message: str) -> str:
    """Error text that always encodes: a lone surrogate the client sent is echoed escaped."""
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def _message(err: dict[str, Any]) -> str:
    if err.get("type") == "unstorable_json":
        return err["msg"]
    if err.get("type") == "json_invalid":
        ctx = err.get("ctx") or {}
        return f"body: malformed JSON ({ctx.get('error', 'invalid')}) at position {err['loc'][-1]}"
    if err.get("type") == "missing" and list(err["loc"]) == ["body"]:
        return "body: missing; expected a JSON object"
    return f"{_where(tuple(err['loc']))}: {err['msg'].removeprefix('Value error, ')}"


def install(app: FastAPI) -> None:
    @app.exception_handler(LocalboError)
    async def _engine_error(_: Request, exc: LocalboError) -> JSONResponse:
        retry = {"Retry-After": str(RETRY_AFTER_SECONDS)} if exc.status_code == 503 else None
        return JSONResponse({"detail": _text(exc.message)}, status_code=exc.status_code, headers=retry)

    @app.exception_handler(OperationalError)
    async def _database_busy(_: Request, exc: OperationalError) -> JSONResponse:
        """SQLite's "database is locked" past its busy timeout, a lock or serialisation timeout on Postgres:
        the request changed nothing, so the client may retry. A dropped connection is a 503 too: a retried
        tell is idempotent and a retried ask carries its Idempotency-Key. Anything else is a server error."""
        text = str(exc.orig).lower()
        if "locked" in text or "lock timeout" in text or "could not serialize" in text or "deadlock" in text:
            return JSONResponse(
                {"detail": "database: busy, nothing was changed; retry"},
                status_code=503,
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        if exc.connection_invalidated:  # the database dropped the connection (a restart, a terminated backend)
            return JSONResponse(
                {"detail": "database: the connection was lost; retry (an Idempotency-Key makes the retry safe)"},
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

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Any:
        """A 405's ``Allow`` lists every documented method of the path (Starlette names only the first
        route's)."""
        if exc.status_code == 404 and exc.detail == "Not Found":  # no route matched (ours name what is missing)
            asked = f"{request.method} {_text(request.scope.get('path', ''))}"
            return JSONResponse(
                {"detail": f"route: no route {asked}; the routes are listed at /docs (and /openapi.json)"},
                status_code=404,
            )
        if exc.status_code != 405:
            return await http_exception_handler(request, exc)
        path = request.scope.get("path", "")
        allowed = {
            method.upper()
            for template, operations in request.app.openapi()["paths"].items()
            if re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), path)
            for method in operations
        }
        headers = {"Allow": ", ".join(sorted(allowed))} if allowed else None
        return JSONResponse({"detail": "Method Not Allowed"}, status_code=405, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        detail = "; ".join(_message(e) for e in errors[:5])
        kind = request.headers.get("content-type", "")
        sent = await request.body()
        if sent and any(tuple(e["loc"]) == ("body",) for e in errors) and "json" not in kind.lower():
            # a JSON body sent as text (curl's -d says form-urlencoded): FastAPI read no object from it;
            # no body at all keeps FastAPI's own 'missing'
            detail = f"body: send it as JSON with the header content-type: application/json (got {kind or 'none'!r})"
        fields = [{"field": _text(_field(e)), "message": _text(e["msg"])} for e in errors]
        return JSONResponse({"detail": _text(detail), "errors": fields}, status_code=422)


def _field(err: dict[str, Any]) -> str:
    if err.get("type") == "unstorable_json":
        return str((err.get("ctx") or {}).get("where", "body"))
    return "body" if err.get("type") == "json_invalid" else _where(tuple(err["loc"]))


class Utf8Body:
    """Request bodies are UTF-8 JSON: a declared charset other than UTF-8 is a 415, bytes that are not
    UTF-8 (or hold a raw NUL, as UTF-16 does) a 400, before anything parses them (JSON parsers guess
    UTF-16 and UTF-32 from the bytes, which would let such bodies through)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        content_type = dict(scope.get("headers") or []).get(b"content-type", b"").decode("latin-1")
        for part in content_type.split(";")[1:]:
            key, _, value = part.strip().partition("=")
            if key.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
                detail = f"Content-Type: charset {value.strip()!r} is not supported; expected UTF-8 JSON"
                return await JSONResponse({"detail": _text(detail)}, status_code=415)(scope, receive, send)
        decoder = codecs.getincrementaldecoder("utf-8")()

        async def checked_receive() -> dict:
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                try:
                    decoder.decode(chunk, final=not message.get("more_body", False))
                except UnicodeDecodeError:
                    raise HTTPException(400, "body: expected UTF-8 JSON; the bytes are not UTF-8") from None
                if b"\x00" in chunk:
                    raise HTTPException(400, "body: expected UTF-8 JSON; a raw NUL byte is not (UTF-16?)")
            return message

        await self.app(scope, checked_receive, send)


class BodySizeLimit:
    """Refuses request bodies over ``limit`` bytes with a 413, before they are parsed.

    A study creation may reach ``create_limit`` (a finite space carries its candidates); the route then
    holds any other creation to ``limit`` (``check_create_size``), so only finite spaces get the room.

    Ours rather than FastAPI's ``max_body_size`` (FastAPI 0.165 on Starlette 1.10's
    ``RequestBodyLimitMiddleware``), which does not do the same job: its 413 reads "Content Too Large" (plain text
    when the Content-Length is over, JSON when a chunked body runs over), naming neither the limit nor the setting
    that raises it, which ours does and the client shows; a route's own limit is fixed where the route is declared,
    where ours come from the app's ``Settings``; and the creation route needs the count of bytes read
    (``scope["state"]["body_bytes"]``), which Starlette keeps private.
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
            return await self._refuse(receive, send, limit, setting)
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

    async def _refuse(self, receive: Any, send: Any, limit: int, setting: str) -> None:
        await JSONResponse({"detail": self._detail(limit, setting)}, status_code=413)({"type": "http"}, receive, send)
