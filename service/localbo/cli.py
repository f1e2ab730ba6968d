"""The ``localbo`` command: serve, upgrade the database, look at studies."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from localbo.config import Settings

app = typer.Typer(help="localbo: ask/tell optimization service with local BO policies.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
studies_app = typer.Typer(help="Look at studies in the database.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(studies_app, name="studies")

DbOption = Annotated[str | None, typer.Option("--db", help="Database URL (default: LOCALBO_DATABASE_URL)")]


def _settings(db: str | None = None, **overrides: Any) -> Settings:
    """The settings from the environment, then ``overrides`` (Settings fields, None: unset; pydantic validates them)."""
    values = {k: v for k, v in overrides.items() if v is not None}
    if db:
        values["database_url"] = db
    return Settings(**values)


def is_loopback(host: str) -> bool:
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def auth_refusal(raw_tokens: str, host: str, insecure: bool) -> str | None:
    """Why ``serve`` must not start with these tokens on this host, or None. Judged on the parsed tokens,
    as the app will use them: a setting that holds no token (``;``, blanks) is no auth, like an empty one."""
    from localbo.api.auth import parse_tokens

    try:
        tokens = parse_tokens(raw_tokens)
    except ValueError as exc:
        return f"refusing to start: {exc}"
    if tokens or insecure or is_loopback(host):
        return None
    held = "is not set" if not raw_tokens else f"holds no token ({raw_tokens!r})"
    return (
        f"refusing to bind {host} without tokens: LOCALBO_TOKENS {held}, so every caller would be admin; "
        "set LOCALBO_TOKENS='token=admin', or pass --insecure if the network is trusted"
    )


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8000)")] = None,
    db: DbOption = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="Allow a non-loopback bind without tokens")] = False,
    workers: Annotated[int, typer.Option(help="API processes")] = 1,
) -> None:
    """Run the HTTP service (applies database migrations first)."""
    import uvicorn

    settings = _settings(db, host=host, port=port)
    refusal = auth_refusal(settings.tokens, settings.host, insecure)
    if refusal:
        typer.echo(refusal, err=True)
        raise typer.Exit(2)
    from localbo.bootstrap import prepare_database

    prepare_database(settings)  # once, before the processes start: none of them migrates
    # the API processes read their settings from the environment: the command line's win there too
    os.environ.update(
        LOCALBO_DATABASE_URL=settings.database_url, LOCALBO_HOST=settings.host, LOCALBO_PORT=str(settings.port)
    )
    from localbo.logs import dict_config

    with metrics_directory(workers):
        uvicorn.run(
            "localbo.api:create_app",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=workers,
            log_config=dict_config(settings.log_format, settings.access_log),
            access_log=False,  # localbo.access logs each request with its id (LOCALBO_ACCESS_LOG)
        )


@app.command()
def demo(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1")] = 8000,
    db: Annotated[str, typer.Option("--db", help="Database URL")] = "sqlite:///./localbo-demo.db",
    policy: Annotated[str, typer.Option(help="The study's policy")] = "minucb",
    trials: Annotated[int, typer.Option(min=1, help="Measurements the simulated lab makes")] = 300,
    delay: Annotated[float, typer.Option(min=0, help="Seconds each measurement takes")] = 0.5,
) -> None:
    """Serve on 127.0.0.1 with a study that a simulated lab (the 6-d Hartmann function) runs in the
    background: open the dashboard and watch a local-BO run live. Ctrl-C stops both."""
    import uvicorn

    from localbo.bootstrap import prepare_database
    from localbo.demo import start_lab
    from localbo.logs import dict_config

    settings = _settings(db, host="127.0.0.1", port=port)
    prepare_database(settings)
    os.environ.update(LOCALBO_DATABASE_URL=settings.database_url, LOCALBO_HOST="127.0.0.1", LOCALBO_PORT=str(port))
    start_lab(f"http://127.0.0.1:{port}", f"demo-{policy}", policy, trials, delay)
    config = dict_config(settings.log_format, settings.access_log)
    uvicorn.run("localbo.api:create_app", factory=True, host="127.0.0.1", port=port, log_config=config)


@contextmanager
def metrics_directory(workers: int) -> Iterator[None]:
    """Several API processes write their metrics to one directory that every scrape sums
    (prometheus_client's multiprocess mode); a fresh one per run unless PROMETHEUS_MULTIPROC_DIR is set."""
    if workers <= 1 or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    folder = tempfile.mkdtemp(prefix="localbo-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = folder
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@app.command()
def worker(
    queue: Annotated[list[str], typer.Option(help="Queues to serve: cpu and/or gpu (repeat the option)")] = ["cpu"],  # noqa: B006
    device: Annotated[str, typer.Option(help="Where policies compute: auto | cpu | cuda")] = "auto",
    concurrency: Annotated[int, typer.Option(min=1, help="Computations at once in this worker")] = 1,
    loglevel: Annotated[str, typer.Option(help="Celery log level")] = "info",
) -> None:
    """Run a Celery worker that computes policy suggestions (needs LOCALBO_REDIS_URL, no database)."""
    from localbo.workers.celery_app import make_celery, queue_name, resolve_device, set_worker_device

    bad = [q for q in queue if q not in ("cpu", "gpu")]
    if bad:
        raise typer.BadParameter(f"expected cpu or gpu, got {', '.join(bad)}", param_hint="--queue")
    try:
        resolved = resolve_device(device)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--device") from None
    settings = _settings()
    if settings.torch_threads:
        import torch

        torch.set_num_threads(settings.torch_threads)
    set_worker_device(resolved)
    if settings.worker_metrics_port:
        from prometheus_client import start_http_server

        start_http_server(settings.worker_metrics_port, addr=settings.worker_metrics_host)
    queues = ",".join(queue_name(settings, q) for q in queue)
    typer.echo(f"localbo worker: queues {queues} on {settings.redis_url}, device {resolved}", err=True)
    make_celery(settings).worker_main(
        [
            "worker",
            f"--queues={queues}",
            "--pool=threads",  # torch releases the GIL; forking after torch is loaded is unsafe
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            f"--hostname=localbo-{'-'.join(queue)}-{os.getpid()}@%h",
            "--without-gossip",
            "--without-mingle",
        ]
    )


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Apply all Alembic migrations to the database."""
    from localbo.bootstrap import prepare_database

    settings = _settings(db)
    prepare_database(settings)
    typer.echo(f"database at head: {settings.database_url}")


def _studies(db: str | None):  # noqa: ANN202
    """The read side only (no planner, no policies, no torch): the read verbs start in well under a second."""
    from localbo.bootstrap import prepare_database, read_only

    settings = _settings(db)
    prepare_database(settings)
    return read_only(settings)


@studies_app.command("list")
def studies_list(db: DbOption = None) -> None:
    """One line per study: name, policy, trials, best value."""
    rows = _studies(db)[1].list()
    typer.echo(f"{'name':30} {'direction':9} {'policy':14} {'trials':>7} {'done':>7} best")
    for s in rows:
        m = s["summary"]
        typer.echo(
            f"{s['name']:30} {s['direction']:9} {s['policy']:14} "
            f"{m['n_trials']:>7} {m['n_complete']:>7} {m['best_value']}"
        )


@studies_app.command("show")
def studies_show(name: str, db: DbOption = None) -> None:
    """The study as JSON, with its best trial."""
    studies = _studies(db)[1]
    typer.echo(json.dumps({"study": studies.get(name), "best": studies.best(name)}, indent=2))


@studies_app.command("export")
def studies_export(
    name: str,
    db: DbOption = None,
    format: Annotated[str, typer.Option(help="csv or json")] = "csv",
) -> None:
    """Print the study's trials as CSV or JSON."""
    from localbo import export

    if format not in export.FORMATS:
        raise typer.BadParameter("expected csv or json", param_hint="--format")
    text = export.render(_studies(db)[0], name, format)
    typer.echo(text, nl=format == "json")


def main() -> None:
    """The ``localbo`` command: a failure the user can act on is one line on stderr (exit 1), not a
    traceback; anything else is a bug and keeps its traceback."""
    from pydantic import ValidationError
    from sqlalchemy.exc import ArgumentError, OperationalError

    from localbo.errors import LocalboError

    try:
        app()
    except LocalboError as exc:
        _fail(exc.message)
    except OperationalError as exc:
        _fail(f"database: {str(exc.orig).strip().splitlines()[0]}")
    except ArgumentError as exc:
        _fail(f"database URL: {exc}")
    except ValidationError as exc:
        err = exc.errors()[0]
        _fail(f"setting {'.'.join(str(p) for p in err['loc']).upper()}: {err['msg']}")
    except ValueError as exc:  # a malformed setting (LOCALBO_TOKENS...)
        _fail(str(exc))


def _fail(message: str) -> None:
    typer.echo(f"localbo: error: {message}", err=True)
    raise SystemExit(1)


if __name__ == "__main__":
    main()
