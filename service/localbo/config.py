"""Settings from the environment (prefix ``LOCALBO_``), in one place."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LOCALBO_", extra="ignore", populate_by_name=True)

    database_url: str = Field(
        default="sqlite:///./localbo.db",
        validation_alias=AliasChoices("LOCALBO_DATABASE_URL", "DATABASE_URL"),
        description="SQLAlchemy URL: `sqlite:///path` or `postgresql+psycopg://user@host/db`",
    )
    host: str = Field(
        default="127.0.0.1",
        description="The address `localbo serve` listens on; `0.0.0.0` is every interface, which needs "
        "`LOCALBO_TOKENS` (or `--insecure`)",
    )

    @field_validator("database_url")
    @classmethod
    def _driver(cls, url: str) -> str:
        """``postgres://`` (Heroku's, many hosts') and ``postgresql://`` use psycopg 3, the driver we install."""
        for scheme in ("postgres://", "postgresql://"):
            if url.startswith(scheme):
                return "postgresql+psycopg://" + url.removeprefix(scheme)
        return url

    port: int = Field(default=8000, description="The port `localbo serve` listens on (`localbo demo` too, when set)")
    tokens: str = Field(
        default="",
        description="Bearer tokens and their scopes (`admin`, `read:PATTERN`, `write:PATTERN`; `*` in a pattern "
        "matches any characters), `;` between tokens: `tok1=admin;tok2=write:beam-*,read:*`",
    )
    lease_seconds: float = Field(default=3600.0, gt=0, description="Trial lease length")
    idempotency_ttl_seconds: float = Field(
        default=86_400.0, gt=0, description="How long a retried ask still gets its first answer back"
    )
    max_body_bytes: int = Field(default=1_000_000, gt=0, description="Largest request body")
    max_create_bytes: int = Field(
        default=64_000_000, gt=0, description="Largest body of a study creation (a finite space's candidates)"
    )
    max_ask_count: int = Field(default=1000, gt=0, description="Largest count of one ask")
    sqlite_synchronous: str = Field(
        default="NORMAL",
        description="SQLite PRAGMA synchronous: NORMAL (WAL: never corrupts, a power cut may "
        "undo the last commits) or FULL (fsync per commit, about 2x slower here)",
    )
    torch_threads: int = Field(
        default=1,
        ge=0,
        description="torch threads of each server or worker process: 1, each plan on one core (a GP on a few "
        "hundred points gained nothing from more, and torch's own choice made a suggest 16-100x slower beside "
        "other load here: benchmarks/results/torch_threads.md); 0 keeps torch's choice, one per core",
    )
    device: str = Field(default="cpu", description="Where policies compute: `auto` | `cpu` | `cuda`")
    log_format: Literal["text", "json"] = Field(
        default="text", description="Server and worker logs: text, or json (one object a line, with extra fields)"
    )
    access_log: bool = Field(
        default=False, description="Log every request (method, route, status, duration, request id) at info"
    )

    # -- where and when policies compute (see localbo.workers and localbo.planning) --
    executor: Literal["inline", "celery"] = Field(
        default="inline", description="inline: a bounded pool in the API process; celery: workers via Redis"
    )
    inline_workers: int = Field(default=2, ge=1, description="Policy computations at once in one API process")
    plan_threads: int = Field(default=8, ge=1, description="Background planning jobs at once (mostly waiting)")
    suggest_ahead: bool = Field(default=True, description="Compute the next plan when a tell completes what it needs")
    ask_wait_seconds: float = Field(
        default=30.0, ge=0, description="An ask waits this long for the policy, then gets a fallback point"
    )
    ask_wait_max_seconds: float = Field(
        default=900.0, ge=0, description="The longest an ask may choose to wait for the policy (its wait_seconds)"
    )
    policy_timeout_seconds: float = Field(
        default=900.0, gt=0, description="The longest one policy computation may take (worker result wait)"
    )
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0",
        validation_alias=AliasChoices("LOCALBO_REDIS_URL", "REDIS_URL"),
        description="Celery broker and result backend",
    )
    celery_queue_prefix: str = Field(default="localbo-", description="Queue names: the prefix and `cpu` or `gpu`")
    celery_visibility_timeout: float = Field(
        default=900.0, gt=0, description="A task a dead worker held is handed out again after this many seconds"
    )
    task_heartbeat_seconds: float = Field(
        default=2.0,
        gt=0,
        description="A worker refreshes its heartbeat this often; after 5 missed beats the API calls its task lost "
        "and sends it again (once)",
    )
    task_pickup_seconds: float = Field(
        default=20.0,
        gt=0,
        description="A queued task no live worker serves for this long is computed in the API process instead",
    )
    worker_metrics_port: int = Field(
        default=0, ge=0, le=65535, description="A worker serves Prometheus metrics on this port (0: none)"
    )
    worker_metrics_host: str = Field(default="127.0.0.1", description="The address a worker's metrics listen on")
    gpu_min_size: int = Field(
        default=0,
        ge=0,
        description="Route studies with GP points x parameters >= this to the gpu queue (0: never); GP points: the "
        "results the policy's GP fits (a local policy's window, a global one's max_data; auto: its last choice's)",
    )


@lru_cache
def get_settings() -> Settings:
    return Settings()
