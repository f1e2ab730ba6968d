"""Bearer tokens with scopes: ``admin``, ``read:PATTERN``, ``write:PATTERN`` (write implies read).

``LOCALBO_TOKENS='tok1=admin;tok2=write:beam-*,read:*'``. Patterns are shell-style
(``fnmatch``) over study names. With no tokens configured, every caller is admin.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from fnmatch import fnmatchcase

from fastapi import HTTPException, Request


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


async def principal(request: Request) -> Principal:
    """FastAPI dependency (async: no thread hop): who is calling, 401 if no token fits."""
    tokens: dict[str, Principal] = request.app.state.tokens
    if not tokens:
        return ANONYMOUS_ADMIN
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise HTTPException(401, "Authorization: expected 'Bearer <token>'", {"WWW-Authenticate": "Bearer"})
    for known, who in tokens.items():
        if hmac.compare_digest(known.encode(), token.strip().encode()):
            return who
    raise HTTPException(401, "Authorization: unknown token", {"WWW-Authenticate": "Bearer"})


def check_read(who: Principal, study: str) -> None:
    if not who.can_read(study):
        raise HTTPException(403, f"token may not read study {study!r}")


def check_write(who: Principal, study: str) -> None:
    if not who.can_write(study):
        raise HTTPException(403, f"token may not write study {study!r}")
