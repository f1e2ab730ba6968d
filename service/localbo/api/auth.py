"""Bearer tokens with scopes: ``admin``, ``read:PATTERN``, ``write:PATTERN`` (write implies read).

``LOCALBO_TOKENS='tok1=admin;tok2=write:beam-*,read:*'``. Patterns are shell-style
(``fnmatch``) over study names. A setting that holds no token (empty, ``;``, blanks) means no auth:
every caller is admin, and ``localbo serve`` refuses a non-loopback bind unless ``--insecure``.
A malformed entry is an error at startup, never skipped.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from fastapi import HTTPException, Request
from fastapi.responses import JSONResponse

from localbo import dashboard
from localbo.api import openapi


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


SCOPE_HELP = "expected 'token=SCOPE[,SCOPE...]' with SCOPE one of admin, read:PATTERN, write:PATTERN"


def parse_tokens(raw: str) -> dict[str, Principal]:
    """Token -> its scopes; ``{}`` (no auth) when ``raw`` holds no entry. ``ValueError`` names the first bad
    entry by position and scopes, never by its secret."""
    tokens: dict[str, Principal] = {}
    for position, entry in enumerate(raw.split(";"), start=1):
        if not entry.strip():
            continue  # blank entries (a trailing ';') hold nothing
        token, sep, scopes = (part.strip() for part in entry.partition("="))
        where = f"LOCALBO_TOKENS entry {position}"
        if not sep:
            raise ValueError(f"{where}: no '=' between the token and its scopes; {SCOPE_HELP}")
        if not token:
            raise ValueError(f"{where}: no token before '='; {SCOPE_HELP}")
        if any(c.isspace() for c in token):
            raise ValueError(f"{where}: the token contains whitespace; a bearer token is one word")
        if token in tokens:
            raise ValueError(f"{where}: the same token as an earlier entry; list its scopes once, comma-separated")
        tokens[token] = _principal(where, scopes)
    return tokens


def _principal(where: str, scopes: str) -> Principal:
    admin = False
    read: list[str] = []
    write: list[str] = []
    words = [s.strip() for s in scopes.split(",")]
    if not any(words):
        raise ValueError(f"{where}: the token has no scope; {SCOPE_HELP}")
    for scope in words:
        kind, colon, pattern = scope.partition(":")
        if kind == "admin" and not colon:
            admin = True
        elif kind in ("read", "write") and pattern:
            (read if kind == "read" else write).append(pattern)
        else:
            raise ValueError(f"{where}: unknown scope {scope!r}; {SCOPE_HELP}")
    return Principal(admin, tuple(read), tuple(write))


PUBLIC_PATHS = frozenset({"/healthz"}) | dashboard.PUBLIC_PATHS | openapi.PUBLIC_PATHS


def is_public(path: str) -> bool:
    """Health, the API document with /docs, and the dashboard's page shell: they hold no data."""
    return path in PUBLIC_PATHS or path.startswith((dashboard.PUBLIC_PREFIX, openapi.PUBLIC_PREFIX))


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
