"""Prometheus metrics of the service: what ``/metrics`` (and ``localbo worker --metrics-port``) expose.

Metrics live in prometheus_client's process-wide registry, the library's convention. Several API
processes (``localbo serve --workers N``) share one directory (``PROMETHEUS_MULTIPROC_DIR``, which
``serve`` sets up) and every scrape sums them. Labels are bounded: routes are templates
(``/api/v1/studies/{study}/ask``), never study names, so the series count does not grow with studies.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from localbo.domain.vocabulary import FALLBACK_SOURCES

CONTENT_TYPE = CONTENT_TYPE_LATEST

requests = Counter(
    "localbo_http_requests", "HTTP requests answered, by route template and status", ["method", "route", "status"]
)
request_seconds = Histogram(
    "localbo_http_request_duration_seconds",
    "Time to answer an HTTP request (to the end of its body; event streams excluded)",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
asked = Counter(
    "localbo_asked_trials",
    "Trials handed out by asks, by where their point came from: plan (the policy's plan, incl. a lease's "
    "point offered again) or fallback (made up: the policy failed or was late)",
    ["source"],
)
policy_seconds = Histogram(
    "localbo_policy_compute_seconds",
    "Wall time of one policy computation, where it ran (an API process or a worker)",
    ["policy", "device"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900),
)
policy_outcomes = Counter(
    "localbo_policy_computations", "Policy computations the planner ran, by outcome", ["policy", "outcome"]
)
lease_expiries = Counter("localbo_lease_expiries", "Running trials whose lease ran out (they became stale)")
event_streams = Gauge(
    "localbo_event_streams_open", "Server-sent event streams open now (the dashboard's)", multiprocess_mode="livesum"
)


def observe_request(method: str, route: str, status: int, seconds: float | None) -> None:
    requests.labels(method, route, str(status)).inc()
    if seconds is not None:
        request_seconds.labels(method, route).observe(seconds)


def count_asked(sources: list[str]) -> None:
    """Trials an ask handed out, by their source: "fallback", or a policy's name / "stale-retry" (the plan)."""
    fallbacks = sum(1 for s in sources if s in FALLBACK_SOURCES)
    if fallbacks:
        asked.labels("fallback").inc(fallbacks)
    if len(sources) > fallbacks:
        asked.labels("plan").inc(len(sources) - fallbacks)


@contextmanager
def timed_policy(policy: str, device: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        policy_seconds.labels(policy, device).observe(time.perf_counter() - start)


async def counted_stream(stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``stream``, counted in ``localbo_event_streams_open`` while a client holds it."""
    event_streams.inc()
    try:
        async for chunk in stream:
            yield chunk
    finally:
        event_streams.dec()


class PlanQueue:
    """``localbo_plan_queue_points``: the points waiting in every study's plan, read from the database at
    scrape time (the queue is shared by every API process, so no process's own count would be right)."""

    def __init__(self, count: Callable[[], tuple[int, int]]) -> None:
        self.count = count

    def collect(self) -> Iterator[GaugeMetricFamily]:
        points, studies = self.count()
        yield GaugeMetricFamily("localbo_plan_queue_points", "Planned points no ask has taken yet", value=points)
        yield GaugeMetricFamily("localbo_plan_queue_studies", "Studies whose plan holds points", value=studies)


def exposition(plan_queue: PlanQueue | None = None) -> bytes:
    """The text a scrape gets: this process's metrics (every process's, in multiprocess mode), then the
    database's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    if plan_queue is not None:
        scrape = CollectorRegistry(auto_describe=False)
        scrape.register(plan_queue)
        text += generate_latest(scrape)
    return text
