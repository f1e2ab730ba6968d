"""Operations (issue 20, item 3): /metrics after a short run, request ids in headers, error bodies and
the access log, JSON logs. A Celery worker's own metrics: tests/test_celery_workers.py."""

from __future__ import annotations

import json
import logging
import logging.config

import pytest
from conftest import unique
from localbo.logs import JsonFormatter, dict_config
from localbo.storage import plan_queue
from localbo.storage import repository as repo
from localbo.storage.models import utcnow
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import update

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0}, "y": {"type": "float", "low": 0.0, "high": 1.0}}
ASK = "/api/v1/studies/{study}/ask"


def scrape(client, **headers: str) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics as (name, sorted labels) -> value."""
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def total(samples: dict, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


def test_metrics_after_a_short_run_are_present_and_consistent(make_client) -> None:
    api = make_client(suggest_ahead=False)
    before = scrape(api)
    name = unique("metrics")
    assert (
        api.post("/api/v1/studies", json={"name": name, "space": SPACE, "policy": "sobol", "seed": 1}).status_code
        == 201
    )
    numbers = []
    for _ in range(4):
        (trial,) = api.post(f"/api/v1/studies/{name}/ask", json={}).json()["trials"]
        numbers.append(trial["number"])
    for n in numbers[:3]:
        assert api.post(f"/api/v1/studies/{name}/trials/{n}/tell", json={"value": float(n)}).status_code == 200
    with api.app.state.service.write.begin() as conn:  # the fourth trial's lease ran out
        conn.execute(update(repo.trials).values(lease_expires_at=utcnow().replace(year=2000)))
    api.app.state.service.asking._expiry_checked.clear()  # the next ask sweeps now, not a second later
    assert api.post(f"/api/v1/studies/{name}/ask", json={"count": 2}).status_code == 200
    assert api.post(f"/api/v1/studies/{name}/trials/999/heartbeat").status_code == 404
    after = scrape(api)

    def grew(metric: str, **labels: str) -> float:
        return total(after, metric, **labels) - total(before, metric, **labels)

    assert grew("localbo_http_requests_total", method="POST", route=ASK, status="200") == 5
    assert (
        grew("localbo_http_requests_total", route="/api/v1/studies/{study}/trials/{number}/heartbeat", status="404")
        == 1
    )
    assert grew("localbo_http_request_duration_seconds_count", method="POST", route=ASK) == 5
    assert grew("localbo_asked_trials_total") == 6, "six trials were handed out"
    plan, fallback = (
        grew("localbo_asked_trials_total", source="plan"),
        grew("localbo_asked_trials_total", source="fallback"),
    )
    assert plan + fallback == 6 and plan >= 1, (plan, fallback)
    assert grew("localbo_lease_expiries_total") == 1
    assert grew("localbo_policy_compute_seconds_count", policy="sobol", device="cpu") >= 1
    assert grew("localbo_policy_computations_total", policy="sobol", outcome="ok") >= 1
    with api.app.state.service.db.connect() as conn:
        points, studies = plan_queue.plan_totals(conn)
    assert total(after, "localbo_plan_queue_points") == points
    assert total(after, "localbo_plan_queue_studies") == studies
    assert ("localbo_event_streams_open", ()) in after


def test_metrics_need_a_token_when_tokens_are_set(make_client) -> None:
    api = make_client(tokens="reader=read:beam-*;admin=admin")
    response = api.get("/metrics")
    assert response.status_code == 401 and response.json()["request_id"] == response.headers["x-request-id"]
    assert scrape(api, Authorization="Bearer reader")  # any valid token may read the server's metrics
    assert api.get("/healthz").status_code == 200, "health stays public"


def test_every_answer_carries_a_request_id_and_every_error_body_names_it(api) -> None:
    fresh = api.get("/healthz")
    assert len(fresh.headers["x-request-id"]) == 32
    given = api.get("/api/v1/studies/nosuch", headers={"X-Request-ID": "lab-rig-7.42"})
    assert given.status_code == 404
    assert given.headers["x-request-id"] == "lab-rig-7.42" == given.json()["request_id"]
    assert "nosuch" in given.json()["detail"]
    # an id that is not a short token (spaces, too long) is replaced, not echoed into logs and headers
    odd = api.get("/api/v1/studies/nosuch", headers={"X-Request-ID": "x" * 65})
    assert odd.headers["x-request-id"] != "x" * 65 and odd.json()["request_id"] == odd.headers["x-request-id"]
    invalid = api.post("/api/v1/studies", json={"name": "a"})
    assert invalid.status_code == 422
    body = invalid.json()
    assert body["request_id"] == invalid.headers["x-request-id"] and body["errors"], body
    assert int(invalid.headers["content-length"]) == len(invalid.content)


def test_the_access_log_is_json_with_the_request_id(api, caplog: pytest.LogCaptureFixture) -> None:
    logging.getLogger("localbo.access").setLevel(logging.INFO)
    try:
        with caplog.at_level(logging.INFO, logger="localbo.access"):
            response = api.get("/api/v1/studies/nosuch", headers={"X-Request-ID": "req-1"})
    finally:
        logging.getLogger("localbo.access").setLevel(logging.NOTSET)
    (record,) = [r for r in caplog.records if r.name == "localbo.access"]
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-1" == response.headers["x-request-id"]
    assert (line["method"], line["route"], line["status"]) == ("GET", "/api/v1/studies/{study}", 404)
    assert line["level"] == "info" and line["duration_ms"] >= 0 and line["logger"] == "localbo.access"


def test_the_servers_log_configuration_loads_in_both_formats(capsys: pytest.CaptureFixture[str]) -> None:
    names = ["", "localbo", "localbo.access", "uvicorn", "uvicorn.error", "uvicorn.access"]
    saved = {
        n: (logging.getLogger(n).level, logging.getLogger(n).handlers[:], logging.getLogger(n).propagate) for n in names
    }
    try:
        logging.config.dictConfig(dict_config("json", access_log=True))
        logging.getLogger("localbo.access").info("GET /x 200", extra={"request_id": "r1", "status": 200})
        logging.getLogger("localbo.access").handlers.clear()
        line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
        assert (line["message"], line["request_id"], line["status"]) == ("GET /x 200", "r1", 200)
        logging.config.dictConfig(dict_config("text", access_log=False))
        logging.getLogger("localbo.access").info("not logged")
        logging.getLogger("localbo").warning("a planner's note")
        err = capsys.readouterr().err
        assert "not logged" not in err and "WARNING localbo: a planner's note" in err
    finally:
        for n, (level, handlers, propagate) in saved.items():
            logger = logging.getLogger(n)
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate
