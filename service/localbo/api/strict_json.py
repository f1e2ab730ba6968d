"""Request bodies whose JSON objects name a key twice are refused (422), not read with the last value winning.

``{"values": {"yield": 0.81, "yield": 0.18}}`` is valid JSON, and Python's parser keeps the last ``yield``: a rig
that sends a key twice (a template filled in twice, a merge gone wrong) would have one of its numbers dropped
without a word. The routers that take bodies use ``StrictJsonRoute`` (FastAPI's custom route class): its requests
parse JSON with a hook that stops at the first repeated key; FastAPI answers that as malformed JSON, a 422
naming the key and where it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute


def _unique_keys(doc: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                where = doc.rfind(json.dumps(key, ensure_ascii=False))  # the repeat (a key written escaped: 0)
                why = f"the key {key!r} twice in one object; send each key once"
                raise json.JSONDecodeError(why, doc, max(where, 0))
            out[key] = value
        return out

    return build


class StrictJsonRequest(Request):
    """The route's request, reading its body through the one Starlette made: the body is read once, and the error
    handlers, which get Starlette's request, find it there (reading it again from the socket would wait forever)."""

    def __init__(self, original: Request) -> None:
        super().__init__(original.scope, original.receive)
        self._original = original

    async def body(self) -> bytes:
        return await self._original.body()

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            try:
                doc = (await self.body()).decode("utf-8")
            except UnicodeDecodeError as exc:  # Utf8Body refuses such bodies first; a 422 all the same
                raise json.JSONDecodeError("expected UTF-8", "", 0) from exc
            self._json = json.loads(doc, object_pairs_hook=_unique_keys(doc))
        return self._json


class StrictJsonRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(StrictJsonRequest(request))

        return strict
