"""Bearer tokens with scopes: ``admin``, ``read:PATTERN``, ``write:PATTERN`` (write implies read).

``LOCALBO_TOKENS='tok1=admin;tok2=write:beam-*,read:*'``. Patterns are shell-style
(``fnmatch``) over study names. With no tokens configured, every caller is admin.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

from localbo import dashboard


@dataclass(frozen=True)
class Principal:
    admin: bool
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()

    def can_read(self, study: str) -> bool:
        return self.admin or any(fnmatchcase(study, p) for p in self.read + self.write)

    def can_write(self, study: str) -> bool:
        return self.admin or any(fnmatchcase(study, p) for p in self.write)


ANONYMOUS_ADMIN = Principal(admin=True)


def parse_tokens(raw: str) -> dict[str, Principal]:
    tokens: dict[str, Principal] = {}
    for entry in filter(None, (e.strip() for e in raw.split(";"))):
        token, sep, scopes = entry.partition("=")
        if not sep or not token.strip():
            raise ValueError(f"LOCALBO_TOKENS: expected 'token=scope,scope', got {entry!r}")
        admin, read, write = False, [], []
        for scope in filter(None, (s.strip() for s in scopes.split(","))):
            kind, _, pattern = scope.partition(":")
            if kind == "admin" and not pattern:
                admin = True
            elif kind in ("read", "write") and pattern:
                (read if kind == "read" else write).append(pattern)
            else:
                raise ValueError(
                    f"LOCALBO_TOKENS: unknown scope {scope!r}; expected admin, read:PATTERN or write:PATTERN"
                )
        tokens[token.strip()] = Principal(admin, tuple(read), tuple(write))
    return tokens


PUBLIC_PATHS = frozenset({"/healthz"}) | dashboard.PUBLIC_PATHS


def is_public(path: str) -> bool:
    """Health, and the dashboard's page shell: it holds no data and asks the viewer for a token."""
    return path in PUBLIC_PATHS or path.startswith(dashboard.PUBLIC_PREFIX)


def authenticate(tokens: dict[str, Principal], authorization: str) -> Principal:
    """Who is calling; HTTPException 401 when tokens are configured and none fits."""
    if not tokens:
        return ANONYMOUS_ADMIN
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise HTTPException(401, "Authorization: expected 'Bearer <token>'", {"WWW-Authenticate": "Bearer"})
    for known, who in tokens.items():
        if hmac.compare_digest(known.encode(), token.strip().encode()):
            return who
    raise HTTPException(401, "Authorization: unknown token", {"WWW-Authenticate": "Bearer"})


class Authentication:
    """ASGI middleware: a 401 comes before anything reads the body; routes then check scopes."""

    def __init__(self, app: Any, tokens: dict[str, Principal]) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not is_public(scope["path"]):
            headers = dict(scope.get("headers") or [])
            try:
                who = authenticate(self.tokens, headers.get(b"authorization", b"").decode("latin-1"))
            except HTTPException as exc:
                response = JSONResponse({"detail": exc.detail}, exc.status_code, headers=exc.headers)
                return await response(scope, receive, send)
            scope.setdefault("state", {})["principal"] = who
        await self.app(scope, receive, send)


async def principal(request: Request) -> Principal:
    """FastAPI dependency (async: no thread hop): the caller the middleware authenticated."""
    return request.state.principal


def check_read(who: Principal, study: str) -> None:
    if not who.can_read(study):
        raise HTTPException(403, f"token may not read study {study!r}")


def check_write(who: Principal, study: str) -> None:
    if not who.can_write(study):
        raise HTTPException(403, f"token may not write study {study!r}")
