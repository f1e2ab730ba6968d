"""Every request gets an id, one access-log record and its metrics.

The id is the caller's ``X-Request-ID`` when it is a short token (a proxy's, a lab script's), else a
fresh one; it comes back in the ``X-Request-ID`` header and in every JSON error body (``request_id``),
so a user's bug report names the server's log line. An exception no handler answered is logged with
its traceback and answered as a JSON 500 carrying the id, not as Starlette's plain-text page.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from localbo import metrics

log = logging.getLogger("localbo.access")
HEADER = b"x-request-id"
GIVEN_ID = re.compile(rb"[A-Za-z0-9._:-]{1,64}")


def request_id(scope: dict) -> str:
    """The id of the request ``scope`` belongs to (set by ``RequestLog``)."""
    return str(scope.get("state", {}).get("request_id", ""))


class RequestLog:
    """Outermost ASGI middleware: request id, access log, request metrics, JSON errors carrying the id."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = dict(scope.get("headers") or []).get(HEADER, b"")
        rid = given.decode() if GIVEN_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid
        start = time.perf_counter()
        status, started, streaming = 500, False, False
        held: dict | None = None  # an error answer's start, until its body is in

        async def send_with_id(message: dict) -> None:
            nonlocal status, started, streaming, held
            if message["type"] == "http.response.start":
                status, started = message["status"], True
                headers = [*message.get("headers", []), (HEADER, rid.encode())]
                message = {**message, "headers": headers}
                content_type = dict(headers).get(b"content-type", b"")
                streaming = content_type.startswith(b"text/event-stream")
                if status >= 400 and content_type.startswith(b"application/json"):
                    held, message["body"] = message, b""
                    return
            elif message["type"] == "http.response.body" and held is not None:
                held["body"] += message.get("body", b"")
                if message.get("more_body"):
                    return
                start_message, body = held, _with_id(held.pop("body"), rid)
                held = None
                start_message["headers"] = [
                    (k, v) for k, v in start_message["headers"] if k.lower() != b"content-length"
                ] + [(b"content-length", str(len(body)).encode())]
                await send(start_message)
                message = {"type": "http.response.body", "body": body}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            log.exception("unhandled error", extra={"request_id": rid, "path": scope.get("path")})
            if started:
                raise  # the answer had started: nothing more can be sent
            body = json.dumps({"detail": "internal error; the server's log names it by request_id", "request_id": rid})
            headers = [(b"content-type", b"application/json"), (HEADER, rid.encode())]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": body.encode()})
        finally:
            seconds = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope.get("method", "")
            metrics.observe_request(method, route, status, None if streaming else seconds)
            log.info(
                "%s %s %s %.1f ms",
                method,
                scope.get("path"),
                status,
                seconds * 1000,
                extra={
                    "request_id": rid,
                    "method": method,
                    "path": scope.get("path"),
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                    "client": (scope.get("client") or ("", 0))[0],
                },
            )


def _with_id(body: bytes, rid: str) -> bytes:
    """An error body with ``request_id`` added (bodies that are not a JSON object pass unchanged)."""
    try:
        value = json.loads(body)
    except ValueError:
        return body
    if not isinstance(value, dict):
        return body
    value.setdefault("request_id", rid)
    return json.dumps(value, ensure_ascii=False).encode()
