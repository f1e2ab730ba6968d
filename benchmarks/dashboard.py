"""Dashboard speed: a 50,000-trial study beside a 500-trial one, in headless Chromium.

What it measures, per study size and storage backend:

* the study page's first data request (``GET .../series``: every trial as columns), timed from
  this process over loopback (median of several) and its size;
* time to interactive: from ``page.goto`` of the study page in a fresh browser context until the
  page has drawn its charts (the value chart, slices per parameter, parallel coordinates), policy
  panel and trials table (``body[data-ready='1']``), in Debian's headless Chromium through
  Playwright; the page's own render time and JS heap are read there too;
* analysis drawn: from the page's navigation until the panels that ask the server (parameter
  importance, the pair surface) have drawn its answers;
* live latency: a tell through the API until the open page shows it (``n-complete`` changes), once
  per running trial (3), each after a random pause so the samples fall anywhere in the stream's poll.

The studies are written straight through the repository (d = 5, random points, a quadratic
value, a few failed and running trials), then a ``localbo serve`` process serves them.

The peer, in the same run: optuna-dashboard (the dashboard Optuna users know) on a study of the
same size and shape, held in Optuna's ``InMemoryStorage`` (its most favourable storage: no database
reads; an RDB study of 50,000 trials takes Optuna most of an hour to write here) and served by its
WSGI app on wsgiref, as ``optuna-dashboard`` serves by default. Its first data request is
``GET /api/studies/{id}?after=0``; it is interactive when its History plot shows every point; its
live latency is a new trial until that plot shows it, ``PEER_LIVE_SAMPLES`` times, each after a random
pause of up to 10 s (its page polls: the samples fall anywhere in its interval).

    .venv/bin/python benchmarks/dashboard.py                     # full run: 500 and 50,000 trials
    .venv/bin/python benchmarks/dashboard.py --backends sqlite
    .venv/bin/python benchmarks/dashboard.py --smoke             # seconds; writes to a temp dir

The full run writes ``benchmarks/results/dashboard.{md,json}`` (or into ``--out``); ``--smoke``
never writes there. Postgres is reached through ``LOCALBO_BENCH_PG`` (default
``postgresql+psycopg://postgres@127.0.0.1:5432/test``), on a fresh database dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import httpx
from harness.processes import ServerProcess, fresh_database
from localbo.bootstrap import Service, prepare_database
from localbo.config import Settings
from localbo.dashboard import chromium
from localbo.space import SearchSpace
from localbo.storage import repository as repo
from playwright.sync_api import TimeoutError as PlaywrightTimeout

RESULT_NAME = "dashboard"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
D = 5
SPACE = {f"x{i}": {"type": "float", "low": -5.0, "high": 5.0} for i in range(D)}
GOALS = {"series_s": 1.0, "interactive_s": 2.0}  # the issues' goals for the large study (issue 17: under 2 s)


LOCALBO, PEER = "localbo", "optuna-dashboard"
PEER_WAIT_S = 90.0  # give up on the peer's page after this long (recorded as not interactive)
PEER_LIVE_SAMPLES = 5  # new trials timed on the peer's open page (ours: one per running trial, 3)
LIVE_PAUSE_S = {LOCALBO: 1.0, PEER: 10.0}  # the most a sample waits before its write: about one poll interval


@dataclass
class Row:
    system: str
    backend: str
    trials: int
    series_median_s: float
    series_max_s: float
    series_bytes: int
    interactive_median_s: float
    interactive_max_s: float
    render_ms: float
    js_heap_mb: float
    live_latency_s: float  # the median of the samples
    live_min_s: float = math.nan
    live_max_s: float = math.nan
    live_samples: int = 0
    analysis_median_s: float = math.nan  # localbo: navigation until importance and the surface are drawn
    analysis_max_s: float = math.nan  # the first load pays the server's first analysis (its imports, the fit)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fill(url: str, name: str, n: int, seed: int = 0) -> None:
    """A study of ``n`` trials, written in chunks through the repository: 1 in 500 failed, the last 3 running."""
    settings = Settings(database_url=url)
    prepare_database(settings)
    engine = Service(settings)
    try:
        engine.studies.create(name, "minimize", SPACE, "random", seed=seed)
        space = SearchSpace.parse(SPACE)
        rng = random.Random(seed)
        start = datetime.now(UTC) - timedelta(seconds=n)
        with engine.write.begin() as conn:
            study = repo.get_study(conn, name)
            for lo in range(0, n, 5000):
                rows = []
                for k in range(lo + 1, min(n, lo + 5000) + 1):
                    x = [rng.random() for _ in range(D)]
                    state = "running" if k > n - 3 else "failed" if k % 500 == 0 else "complete"
                    value = sum((u - 0.3) ** 2 for u in x) * 10 + rng.gauss(0, 0.05) if state == "complete" else None
                    at = start + timedelta(seconds=k)
                    rows.append(
                        {
                            "study_id": study.id,
                            "number": k,
                            "state": state,
                            "params": space.from_unit(x),
                            "x": x,
                            "value": value,
                            "reason": "simulated failure" if state == "failed" else None,
                            "source": "random",
                            "client_id": None,
                            "lease_expires_at": at + timedelta(days=1) if state == "running" else None,
                            "created_at": at,
                            "completed_at": at if state != "running" else None,
                        }
                    )
                repo.insert_trials(conn, rows)
            repo.update_study(conn, study.id, trial_count=n)
    finally:
        engine.close()


def time_requests(url: str, repeats: int) -> tuple[list[float], int]:
    """Seconds per GET of ``url`` (after one warm-up: a server's first request imports lazily), and its size."""
    times, size = [], 0
    with httpx.Client(timeout=120) as client:
        client.get(url).raise_for_status()
        for _ in range(repeats):
            t0 = time.perf_counter()
            r = client.get(url)
            times.append(time.perf_counter() - t0)
            r.raise_for_status()
            size = len(r.content)
    return times, size


def open_and_wait(browser: Any, url: str, ready: str, arg: Any, timeout_s: float) -> tuple[Any, Any, float]:
    """A fresh context and page at ``url``; seconds until the JS predicate ``ready(arg)`` holds (inf if never)."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    t0 = time.perf_counter()
    page.goto(url, timeout=timeout_s * 1000)
    try:
        page.wait_for_function(ready, arg=arg, timeout=timeout_s * 1000)
        elapsed = time.perf_counter() - t0
    except PlaywrightTimeout:
        elapsed = math.inf
    if errors:
        raise RuntimeError(f"page errors at {url}: {errors}")
    return context, page, elapsed


LOCALBO_READY = "() => document.body.dataset.ready === '1' && document.body.dataset.view === 'study'"
# optuna-dashboard: its History plot (the first plotly figure) has drawn a marker per trial
PEER_READY = """(n) => {
  const plot = document.querySelector('.js-plotly-plot');
  return !!plot && (plot.querySelectorAll('.scatterlayer .point').length >= n || !!plot.querySelector('canvas'));
}"""
HEAP_MB = "performance.memory ? performance.memory.usedJSHeapSize / 2**20 : NaN"


# the analysis panels that ask the server have drawn its answers; the page's clock (ms since navigation)
ANALYSIS_DRAWN = """() => {
  const importance = document.querySelector('[data-testid=importance-panel]');
  const surface = document.querySelector('[data-testid=surface-panel]');
  const done = importance && importance.dataset.bars !== undefined
    && surface && ['contour', 'unavailable'].includes(surface.dataset.state);
  return done ? performance.now() : false;
}"""


@dataclass
class PageTimes:
    interactive_s: list[float]
    analysis_s: list[float]
    render_ms: float
    heap_mb: float
    live_s: list[float]


def time_page(browser: Any, url: str, name: str, n: int, repeats: int, live: bool) -> PageTimes:
    """localbo: seconds to interactive and to the analysis drawn per load, the last load's render ms and JS
    heap MB, and (live) the live latencies on the last load."""
    out = PageTimes([], [], math.nan, math.nan, [])
    for k in range(repeats):
        context, page, elapsed = open_and_wait(browser, f"{url}/dashboard/#/study/{name}", LOCALBO_READY, None, 60)
        out.interactive_s.append(elapsed)
        drawn = int(page.locator("#history").get_attribute("data-drawn"))
        if drawn < n * 0.9:
            raise RuntimeError(f"the history chart drew {drawn} points of {n}")
        try:
            at_ms = page.wait_for_function(ANALYSIS_DRAWN, timeout=60_000).json_value()
            out.analysis_s.append(at_ms / 1000)
        except PlaywrightTimeout:
            out.analysis_s.append(math.inf)
        out.render_ms = float(page.evaluate("document.body.dataset.renderMs"))
        out.heap_mb = page.evaluate(HEAP_MB)
        if live and k == repeats - 1:
            out.live_s = live_latencies(page, url, name)
        context.close()
    return out


def live_latencies(page: Any, url: str, name: str) -> list[float]:
    """Each running trial is told through the API after a random pause; seconds until the open page counts it."""
    rng = random.Random(1)
    running = httpx.get(f"{url}/api/v1/studies/{name}/trials", params={"state": "running", "limit": 100}).json()
    samples = []
    for trial in running["trials"]:
        time.sleep(rng.uniform(0, LIVE_PAUSE_S[LOCALBO]))
        before = page.get_by_test_id("n-complete").inner_text()
        t0 = time.perf_counter()
        httpx.post(f"{url}/api/v1/studies/{name}/trials/{trial['number']}/tell", json={"value": 0.5}).raise_for_status()
        page.wait_for_function(
            f"document.querySelector('[data-testid=n-complete]').textContent !== '{before}'", timeout=10_000
        )
        samples.append(time.perf_counter() - t0)
    return samples


def peer_study(n: int, seed: int = 0) -> Any:
    """An Optuna study in memory shaped like ``fill``'s: d = 5, 1 in 500 failed, the last 3 running."""
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage(), study_name=f"bench-{n}")
    dists = {name: FloatDistribution(spec["low"], spec["high"]) for name, spec in SPACE.items()}
    rng = random.Random(seed)
    trials = []
    for k in range(1, n + 1):
        x = [rng.random() for _ in range(D)]
        params = {f"x{i}": -5.0 + 10.0 * u for i, u in enumerate(x)}
        if k > n - 3:
            trials.append(create_trial(params=params, distributions=dists, state=TrialState.RUNNING))
        elif k % 500 == 0:
            trials.append(create_trial(params=params, distributions=dists, state=TrialState.FAIL))
        else:
            value = sum((u - 0.3) ** 2 for u in x) * 10 + rng.gauss(0, 0.05)
            trials.append(create_trial(params=params, distributions=dists, value=value))
    study.add_trials(trials)
    return study


@contextmanager
def peer_server(storage: Any) -> Iterator[str]:
    """optuna-dashboard's WSGI app on wsgiref in a thread (its CLI's default server)."""
    import optuna_dashboard

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    httpd = make_server("127.0.0.1", 0, optuna_dashboard.wsgi(storage), handler_class=Quiet)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def run_peer(browser: Any, n: int, repeats: int, live: bool) -> Row:
    study = peer_study(n)
    completed = n - 3 - n // 500
    with peer_server(study._storage) as url:
        api = f"{url}/api/studies/{study._study_id}?after=0"
        series, size = time_requests(api, repeats * 2 + 1)
        page_url = f"{url}/dashboard/studies/{study._study_id}"
        times: list[float] = []
        heap_mb = math.nan
        samples: list[float] = []
        for k in range(repeats):
            context, page, elapsed = open_and_wait(browser, page_url, PEER_READY, completed, PEER_WAIT_S)
            times.append(elapsed)
            if math.isfinite(elapsed):
                heap_mb = page.evaluate(HEAP_MB)
                if live and k == repeats - 1:
                    rng = random.Random(2)
                    for _ in range(PEER_LIVE_SAMPLES):
                        time.sleep(rng.uniform(0, LIVE_PAUSE_S[PEER]))
                        samples.append(peer_live_latency(page, study))
                        if not math.isfinite(samples[-1]):
                            break
            context.close()
            if not math.isfinite(elapsed):
                break  # one load that never got there is the finding; do not spend minutes on more
    return with_live(Row(PEER, "in-memory", n, statistics.median(series), max(series), size,
               statistics.median(times), max(times), math.nan, heap_mb, math.nan), samples)  # fmt: skip


def with_live(row: Row, samples: list[float]) -> Row:
    """The row with its live-latency samples summarised (median, min, max, how many)."""
    if samples:
        row.live_latency_s = statistics.median(samples)
        row.live_min_s, row.live_max_s, row.live_samples = min(samples), max(samples), len(samples)
    return row


PEER_POINTS = "() => document.querySelector('.js-plotly-plot').querySelectorAll('.scatterlayer .point').length"


def peer_live_latency(page: Any, study: Any) -> float:
    """A completed trial added to the study; seconds until the History plot draws one more point (it polls)."""
    from optuna.distributions import FloatDistribution
    from optuna.trial import create_trial

    dists = {name: FloatDistribution(spec["low"], spec["high"]) for name, spec in SPACE.items()}
    before = page.evaluate(PEER_POINTS)
    t0 = time.perf_counter()
    study.add_trial(create_trial(params={k: 0.0 for k in SPACE}, distributions=dists, value=0.5))
    try:
        page.wait_for_function(f"() => ({PEER_POINTS})() > {before}", timeout=PEER_WAIT_S * 1000)
    except PlaywrightTimeout:
        return math.inf
    return time.perf_counter() - t0


def run(backends: list[str], sizes: list[int], repeats: int, tmp: Path, peer: bool, smoke: bool) -> list[Row]:
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p:
        browser = chromium.launch(p)
        if peer:
            for n in sizes:
                rows.append(run_peer(browser, n, repeats, live=not smoke))  # smoke: no 0-10 s wait for its poll
                progress(describe(rows[-1]))
        for backend in backends:
            for n in sizes:
                with fresh_database(backend, tmp, "dash") as url:
                    name = f"bench-{n}"
                    t0 = time.perf_counter()
                    fill(url, name, n)
                    progress(f"[{backend}] {n} trials written in {time.perf_counter() - t0:.1f} s")
                    server = ServerProcess(url)
                    try:
                        api = f"{server.url}/api/v1/studies/{name}/series"
                        series, size = time_requests(api, repeats * 2 + 1)
                        page = time_page(browser, server.url, name, n, repeats, live=True)
                    finally:
                        server.stop()
                row = Row(
                    LOCALBO,
                    backend,
                    n,
                    statistics.median(series),
                    max(series),
                    size,
                    statistics.median(page.interactive_s),
                    max(page.interactive_s),
                    page.render_ms,
                    page.heap_mb,
                    math.nan,
                    analysis_median_s=statistics.median(page.analysis_s),
                    analysis_max_s=max(page.analysis_s),
                )
                rows.append(with_live(row, page.live_s))
                progress(describe(rows[-1]))
        browser.close()
    return rows


def seconds(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f} s" if math.isfinite(value) else (f"> {PEER_WAIT_S:.0f} s" if value > 0 else "–")


def describe(r: Row) -> str:
    return (
        f"[{r.system}, {r.backend}] {r.trials} trials: first request {seconds(r.series_median_s, 3)}"
        f" ({r.series_bytes / 1e6:.2f} MB), interactive {seconds(r.interactive_median_s)},"
        f" analysis {seconds(r.analysis_median_s)}, render {r.render_ms:.0f} ms,"
        f" heap {r.js_heap_mb:.0f} MB, live {live(r)}"
    )


def live(r: Row) -> str:
    """The live latency: median (min – max, n samples)."""
    if not r.live_samples:
        return "–"
    if r.live_samples == 1:
        return seconds(r.live_latency_s)
    return f"{seconds(r.live_latency_s)} ({seconds(r.live_min_s)} – {seconds(r.live_max_s)}, {r.live_samples} samples)"


def table(rows: list[Row]) -> str:
    lines = [
        "| system | storage | trials | first data request (median / max) | size | interactive in Chromium"
        " (median / max) | analysis panels drawn (median / max) | one redraw | JS heap"
        " | new result → on the page (median (min – max)) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        render = f"{r.render_ms:.0f} ms" if math.isfinite(r.render_ms) else "–"
        heap = f"{r.js_heap_mb:.0f} MB" if math.isfinite(r.js_heap_mb) else "–"
        request = f"{seconds(r.series_median_s, 3)} / {seconds(r.series_max_s, 3)}"
        lines.append(
            f"| {r.system} | {r.backend} | {r.trials:,} | {request}"
            f" | {r.series_bytes / 1e6:.2f} MB | {seconds(r.interactive_median_s)} / {seconds(r.interactive_max_s)}"
            f" | {seconds(r.analysis_median_s)} / {seconds(r.analysis_max_s)} | {render} | {heap} | {live(r)} |"
        )
    return "\n".join(lines)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("localbo", "fastapi", "uvicorn", "sqlalchemy", "psycopg", "playwright", "optuna", "optuna-dashboard"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def chromium_version() -> str:
    import subprocess

    done = subprocess.run([chromium.EXECUTABLE, "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip()


NOTES = [
    "## Reading it fairly",
    "",
    "- The pages do different work. optuna-dashboard's study page also computes and draws hyperparameter"
    " importance, a timeline and more; ours draws the value chart, a slice plot per parameter, parallel"
    " coordinates, the policy panel and a table before it counts as interactive, then asks the server for"
    " parameter importance and the pair surface (the 'analysis panels drawn' column, from the page's navigation)."
    " Its 'interactive' here is only its History plot showing every point, a weaker bar than ours.",
    "- Past 4,000 completed trials our parallel coordinates draw 4,000 lines (the best 1,000 and an even"
    " sample of the rest) and say so on the page; the value chart draws every point.",
    "- Our series sends x in the unit cube (parameters are mapped to their units in the browser) and epoch"
    " seconds; optuna-dashboard sends whole trial objects, hence 80 MB against 9 MB at 50,000 trials.",
    "- optuna-dashboard's live latency is its page's polling (its 'Live Update' reloads the study every 10 s"
    " by default; the samples land anywhere in that interval, plus the reload, which at 50,000 trials is"
    " itself slow); ours is the event stream's 0.5 s poll plus a redraw, which on a big study waits a few"
    " redraw times so a stream of tells never keeps the page busy.",
    "- The machine is shared (2 cores, load average around 7-8 during the run): absolute times are noisy;"
    " the ratios between rows of the same run are the finding.",
]


def plain(row: Row) -> dict[str, Any]:
    """The row for strict JSON: not measured (NaN) is null, never reached (inf) is "timeout"."""
    return {
        k: (None if math.isnan(v) else "timeout") if isinstance(v, float) and not math.isfinite(v) else v
        for k, v in asdict(row).items()
    }


def write_results(rows: list[Row], out: Path, smoke: bool, started: str, repeats: int, cost: dict[str, float]) -> None:
    meta = {
        "wall_s": cost["wall_s"],
        "cpu_s": cost["cpu_s"],
        "started": started,
        "smoke": smoke,
        "repeats": repeats,
        "nproc": os.cpu_count(),
        "load_average": os.getloadavg()[0],
        "machine": platform.machine(),
        "chromium": chromium_version(),
        "versions": versions(),
        "goals": GOALS,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{RESULT_NAME}.json").write_text(json.dumps({"meta": meta, "rows": [plain(r) for r in rows]}, indent=2))
    largest = max(r.trials for r in rows)
    verdicts = []
    for r in rows:
        if r.trials == largest and r.system == LOCALBO:
            ok_series = "met" if r.series_median_s < GOALS["series_s"] else "missed"
            ok_page = "met" if r.interactive_median_s < GOALS["interactive_s"] else "missed"
            verdicts.append(
                f"- {r.backend}, {r.trials:,} trials: first data request {r.series_median_s:.2f} s"
                f" (goal < {GOALS['series_s']:.0f} s: {ok_series}), interactive {r.interactive_median_s:.2f} s"
                f" (goal < {GOALS['interactive_s']:.0f} s: {ok_page}); importance and the surface drawn"
                f" {seconds(r.analysis_median_s)} after navigation"
            )
    md = [
        "# Dashboard speed",
        "",
        "Written by `benchmarks/dashboard.py`" + (" (smoke run)" if smoke else "") + f", started {started}.",
        "",
        f"- machine: {meta['nproc']} CPU core(s), {meta['machine']}, load average {meta['load_average']:.1f} at the end"
        " (shared with other work)",
        f"- the run: {meta['wall_s']:.0f} s wall, {meta['cpu_s']:.0f} CPU s (this process and its children: the"
        " servers and Chromium)",
        f"- browser: {meta['chromium']}, headless, through Playwright {meta['versions']['playwright']}",
        f"- study: d = {D} float parameters, 1 in 500 trials failed, 3 running,"
        " policy `random` (so no iterate-path chart); `localbo serve` (one process)",
        "",
        "First data request: `GET /api/v1/studies/{s}/series` (every trial as columns) from this process over"
        f" loopback, {repeats * 2 + 1} times. Interactive: `page.goto` of the study page in a fresh browser context"
        " until it has drawn the value chart, the parallel coordinates, the policy panel and the trials table"
        f" (`body[data-ready='1']`), {repeats} times. Analysis panels drawn: from the page's navigation until"
        " parameter importance and the pair surface show the server's answers (median of the loads)."
        " One render: the page's own time to redraw everything."
        " New result → on the page: localbo, a tell through the API until the open page counts it (event stream,"
        " 0.5 s poll), once per running trial; optuna-dashboard, a trial added to the study until its History plot"
        f" draws it (its page polls), {PEER_LIVE_SAMPLES} times; each sample after a random pause of up to one poll"
        " interval. optuna-dashboard's study is in memory (see the script's docstring): its numbers exclude"
        " any database time, ours include it.",
        "",
        table(rows),
        "",
        "## Against the goals",
        "",
        *verdicts,
        "",
        *NOTES,
        "",
    ]
    (out / f"{RESULT_NAME}.md").write_text("\n".join(md))


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and its waited-for children (the servers, Chromium)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="200 trials, SQLite; never writes the results")
    parser.add_argument("--backends", help="comma-separated: sqlite,postgres (default both; smoke: sqlite)")
    parser.add_argument("--sizes", help="comma-separated trial counts (default 500,50000; smoke 200)")
    parser.add_argument("--repeats", type=int, help="page loads per study (default 3; smoke 1)")
    parser.add_argument("--out", type=Path, help=f"where to write the results (default {DEFAULT_OUT})")
    parser.add_argument("--no-peer", action="store_true", help="skip optuna-dashboard")
    args = parser.parse_args(argv)
    backends = (args.backends or ("sqlite" if args.smoke else "sqlite,postgres")).split(",")
    sizes = [int(s) for s in (args.sizes or ("200" if args.smoke else "500,50000")).split(",")]
    repeats = args.repeats or (1 if args.smoke else 3)
    if args.smoke:
        if args.out is not None and args.out.resolve() == DEFAULT_OUT.resolve():
            parser.error("--smoke does not write into benchmarks/results; pass another --out")
        out = args.out or Path(tempfile.mkdtemp(prefix="dashboard-smoke-"))
    else:
        out = args.out or DEFAULT_OUT
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    wall0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dashboard-bench-") as tmp:
        rows = run(backends, sizes, repeats, Path(tmp), peer=not args.no_peer, smoke=args.smoke)
    progress("\n" + table(rows))
    write_results(
        rows, out, args.smoke, started, repeats, {"wall_s": time.perf_counter() - wall0, "cpu_s": cpu_seconds()}
    )
    progress(f"\nwrote {out / (RESULT_NAME + '.md')} and {out / (RESULT_NAME + '.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
