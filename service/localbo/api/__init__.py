"""The FastAPI application: routers, error answers, limits. No business logic here."""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI
from fastapi.responses import Response
from sqlalchemy import make_url, text

import localbo
from localbo import dashboard, metrics
from localbo.api import analysis, errors, notes, openapi, progress, studies, trials
from localbo.api.auth import Authentication, parse_tokens
from localbo.api.requestlog import RequestLog
from localbo.api.schemas import Health
from localbo.api.shutdown import on_exit_signals
from localbo.bootstrap import Service
from localbo.config import Settings, get_settings
from localbo.storage import plan_queue

log = logging.getLogger("localbo")


def create_app(settings: Settings | None = None, service: Service | None = None) -> FastAPI:
    """Build the app (uvicorn's factory calls it with no arguments); the schema must be at head already
    (``bootstrap.prepare_database``, which ``localbo serve`` runs once before the processes start)."""
    settings = settings or get_settings()
    tokens = parse_tokens(settings.tokens)
    if settings.torch_threads:
        import torch

        torch.set_num_threads(settings.torch_threads)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        app.state.closing = closing = anyio.Event()  # ends the event streams on shutdown
        undo = on_exit_signals(closing.set)
        told = asyncio.create_task(say_when_bound(settings))  # uvicorn binds after the lifespan starts
        yield
        told.cancel()
        closing.set()
        undo()
        app.state.service.close()

    app = FastAPI(
        title="localbo",
        version=localbo.__version__,
        description="Ask/tell optimization over HTTP with local Bayesian optimization policies.",
        lifespan=lifespan,
        docs_url=None,  # served by openapi.install, without a CDN
        redoc_url=None,
        generate_unique_id_function=openapi.operation_id,
    )
    app.state.settings = settings
    app.state.tokens = tokens
    app.state.service = service or Service(settings)
    errors.install(app)
    openapi.install(app, secured=bool(tokens), max_ask_count=settings.max_ask_count)
    app.add_middleware(errors.Utf8Body)
    app.add_middleware(errors.BodySizeLimit, limit=settings.max_body_bytes, create_limit=settings.max_create_bytes)
    app.add_middleware(Authentication, tokens=tokens)  # 401 before the body is read
    app.add_middleware(RequestLog)  # outermost: every answer, a 401 too, carries the request id
    app.include_router(studies.router)
    app.include_router(trials.router)
    app.include_router(progress.router)
    app.include_router(analysis.router)
    app.include_router(notes.router)
    dashboard.install(app)

    plan_queue = metrics.PlanQueue(lambda: _plan_totals(app.state.service))

    exposition = {"description": "Prometheus text format", "content": {"text/plain": {"schema": {"type": "string"}}}}

    @app.get(
        "/metrics", tags=["health"], response_class=Response, responses={200: exposition, **errors.responses(401, 503)}
    )
    def prometheus_metrics() -> Response:
        """Prometheus metrics of this server (every API process's when there are several); any valid
        token may read them when tokens are set."""
        return Response(metrics.exposition(plan_queue), media_type=metrics.CONTENT_TYPE)

    @app.get("/healthz", response_model=Health, tags=["health"], responses=errors.responses(503))
    def healthz() -> dict:
        with app.state.service.db.connect() as conn:
            conn.execute(text("SELECT 1"))
        return {"status": "ok", "version": localbo.__version__, "database": app.state.service.db.dialect.name}

    return app


def _plan_totals(service: Service) -> tuple[int, int]:
    with service.db.connect() as conn:
        return plan_queue.plan_totals(conn)


async def say_when_bound(settings: Settings, seconds: float = 600.0) -> None:
    """Log ``ready_line`` once the port accepts connections, never before: a port already taken ends the server
    with uvicorn's error and no "listening" line."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(settings.host, settings.host)
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if await _answers(host, settings.port):
            log.info(ready_line(settings))
            return
        await asyncio.sleep(0.05)


async def _answers(host: str, port: int) -> bool:
    """Whether this server answers /healthz on the port (another process's socket there may accept, not answer)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 1.0)
    except (OSError, TimeoutError):
        return False
    try:
        writer.write(b"GET /healthz HTTP/1.0\r\nHost: localbo\r\n\r\n")
        status = await asyncio.wait_for(reader.readline(), 2.0)
        return status.startswith(b"HTTP/") and b" 200 " in status
    except (OSError, TimeoutError):
        return False
    finally:
        writer.close()


def ready_line(settings: Settings) -> str:
    """What the server says once it is up (the password of the database URL hidden)."""
    database = make_url(settings.database_url).render_as_string(hide_password=True)
    return (
        f"localbo listening on http://{settings.host}:{settings.port}, database {database}, "
        f"executor {settings.executor} (dashboard /, API docs /docs, metrics /metrics)"
    )
