"""The HTTP floor under an ask/tell cycle: two servers that answer a tell-and-ask-shaped request with a
fixed next trial and touch no database, so a benchmark can show what uvicorn, httpx and FastAPI cost by
themselves (``asktell_throughput.py``'s floor rows)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

NEXT = {"trials": [{"number": 1, "state": "running", "params": {f"x{i}": 0.5 for i in range(10)}}]}


async def bare(scope: dict, receive: Any, send: Any) -> None:
    """A bare ASGI app: reads the body, answers JSON."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    out = json.dumps({"told": json.loads(body)["tell"], **NEXT}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": out})


class Tell(BaseModel):
    value: float


class Ask(BaseModel):
    count: int = 1
    client_id: str | None = None


class Cycle(BaseModel):
    tell: Tell
    ask: Ask


class Answer(BaseModel):
    told: dict
    trials: list[dict]


fastapi_app = FastAPI()


@fastapi_app.post("/cycle", response_model=Answer)
async def cycle(body: Cycle) -> dict:
    """A FastAPI route with a validated body and response model, as localbo's routes have."""
    return {"told": body.tell.model_dump(), **NEXT}
