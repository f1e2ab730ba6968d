"""The ``localbo`` command: serve, upgrade the database, look at studies."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
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
UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar="LOCALBO_URL",
        help="Read a running server over REST instead of a database (e.g. http://127.0.0.1:8000); --db wins",
    ),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="LOCALBO_TOKEN", help="Bearer token for --url", show_default=False)
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"localbo {version('localbo')}")
        except PackageNotFoundError:  # a source tree on the path, not installed
            typer.echo("localbo (not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit")
    ] = False,
) -> None:
    """localbo: ask/tell optimization service with local BO policies."""


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
    port: Annotated[
        int | None, typer.Option(help="Port on 127.0.0.1 (default LOCALBO_PORT, else 8000 or a free one)")
    ] = None,
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

    if port is None and "LOCALBO_PORT" not in os.environ and not _port_free(8000):
        port = _free_port()
        typer.echo(f"localbo demo: 127.0.0.1:8000 is taken, serving on port {port} instead", err=True)
    settings = _settings(db, host="127.0.0.1", port=port)
    port = settings.port
    prepare_database(settings)
    os.environ.update(LOCALBO_DATABASE_URL=settings.database_url, LOCALBO_HOST="127.0.0.1", LOCALBO_PORT=str(port))
    start_lab(f"http://127.0.0.1:{port}", f"demo-{policy}", policy, trials, delay)
    config = dict_config(settings.log_format, settings.access_log)
    uvicorn.run("localbo.api:create_app", factory=True, host="127.0.0.1", port=port, log_config=config)


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    _said["source"] = _database_source(settings.database_url)
    prepare_database(settings)
    return read_only(settings)


_said: dict[str, str] = {}


def _database_source(url: str) -> str:
    """What a read verb says it read: the database (password hidden), and whether a SQLite file was new."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite" and parsed.database and parsed.database != ":memory:":
        if not os.path.exists(parsed.database):
            return (
                f"database {shown} (no file was there: an empty one was created; "
                "--db names another, --url reads a running server)"
            )
    return f"database {shown}"


def _said_what_was_read() -> None:
    """One line on stderr after the answer: which database or server the verb read (stdout stays the answer)."""
    if _said.get("source"):
        typer.echo(f"localbo: read {_said['source']}", err=True)


class _Remote:
    """The read verbs over REST: a running server's studies, as GET /api/v1/... answers them."""

    def __init__(self, url: str, token: str | None) -> None:
        import httpx

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=30.0)
        _said["source"] = f"server {self.url}"

    def get(self, path: str, **params: str) -> Any:
        import httpx

        from localbo.errors import LocalboError

        try:
            answer = self.http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise LocalboError(f"server {self.url}: {exc or type(exc).__name__}") from None
        if answer.status_code >= 400:
            try:
                detail = answer.json().get("detail", answer.text)
            except ValueError:
                detail = answer.text.strip()[:200]
            raise LocalboError(f"server {self.url}: {answer.status_code}: {detail}")
        return answer

    def list(self) -> list[dict[str, Any]]:
        return self.get("/api/v1/studies").json()["studies"]

    def study(self, name: str) -> dict[str, Any]:
        return self.get(f"/api/v1/studies/{name}").json()

    def best(self, name: str) -> Any:
        return self.get(f"/api/v1/studies/{name}/best").json()

    def pareto(self, name: str) -> Any:
        return self.get(f"/api/v1/studies/{name}/pareto").json()

    def export(self, name: str, format: str) -> str:
        return self.get(f"/api/v1/studies/{name}/export", format=format).text


def _several(study: Mapping[str, Any]) -> bool:
    return len(study.get("objectives") or []) > 1


def _remote(url: str | None, db: str | None, token: str | None) -> _Remote | None:
    """A server to read when --url (or LOCALBO_URL) is given and --db is not."""
    return _Remote(url, token) if url and not db else None


@studies_app.command("list")
def studies_list(db: DbOption = None, url: UrlOption = None, token: TokenOption = None) -> None:
    """One line per study: name, policy, trials, best value (several objectives: the hypervolume)."""
    remote = _remote(url, db, token)
    rows = remote.list() if remote else _studies(db)[1].list()
    typer.echo(f"{'name':30} {'direction':9} {'policy':14} {'trials':>7} {'done':>7} best")
    for s in rows:
        m = s["summary"]
        best = f"hypervolume {m['hypervolume']}" if _several(s) else m["best_value"]
        typer.echo(f"{s['name']:30} {s['direction']:9} {s['policy']:14} {m['n_trials']:>7} {m['n_complete']:>7} {best}")
    _said_what_was_read()


@studies_app.command("show")
def studies_show(name: str, db: DbOption = None, url: UrlOption = None, token: TokenOption = None) -> None:
    """The study as JSON, with its best trial (several objectives: its Pareto front, as GET .../pareto)."""
    remote = _remote(url, db, token)
    if remote:
        study: Mapping[str, Any] = remote.study(name)
        answer = remote.pareto(name) if _several(study) else remote.best(name)
    else:
        studies = _studies(db)[1]
        study = studies.get(name)
        answer = studies.pareto(name) if _several(study) else studies.best(name)
    shown = {"study": study, "pareto" if _several(study) else "best": answer}
    typer.echo(json.dumps(shown, indent=2, default=str))
    _said_what_was_read()


@studies_app.command("export")
def studies_export(
    name: str,
    db: DbOption = None,
    format: Annotated[str, typer.Option(help="csv or json")] = "csv",
    url: UrlOption = None,
    token: TokenOption = None,
) -> None:
    """Print the study's trials as CSV or JSON."""
    from localbo import export

    if format not in export.FORMATS:
        raise typer.BadParameter("expected csv or json", param_hint="--format")
    remote = _remote(url, db, token)
    text = remote.export(name, format) if remote else export.render(_studies(db)[0], name, format)
    typer.echo(text, nl=format == "json" and not text.endswith("\n"))
    _said_what_was_read()


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
