"""What the dashboard reads: the columnar series and the change feed, on SQLite and the real Postgres."""

from __future__ import annotations

import json
import weakref
from datetime import UTC, datetime, timedelta

import pytest
import torch
from conftest import unique
from localbo.api.progress import study_json
from localbo.policies.local_state import PATH_FLOATS, _extend_path
from localbo.progress import Change, Feed, StudiesList

SPACE = {"x": {"type": "float", "low": 0, "high": 10}, "k": {"type": "int", "low": 0, "high": 3}}
API = "/api/v1/studies"


def create(api, **extra) -> str:  # noqa: ANN001
    name = unique()
    r = api.post(API, json={"name": name, "space": SPACE, "policy": "sobol", "seed": 5, **extra})
    assert r.status_code == 201, r.text
    return name


def ask(api, name: str, count: int = 1) -> list[dict]:  # noqa: ANN001
    r = api.post(f"{API}/{name}/ask", json={"count": count})
    assert r.status_code == 200, r.text
    return r.json()["trials"]


def tell(api, name: str, number: int, **body) -> None:  # noqa: ANN001
    r = api.post(f"{API}/{name}/trials/{number}/tell", json=body)
    assert r.status_code == 200, r.text


def decode(data: str) -> dict:
    return json.loads(data)


def test_series_holds_every_trial_as_columns(api) -> None:
    name = create(api, direction="maximize")
    trials = ask(api, name, 4)
    tell(api, name, 1, value=0.25)
    tell(api, name, 2, state="failed", reason="sensor, off")
    tell(api, name, 3, value=-1e-300)
    r = api.get(f"{API}/{name}/series")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["study"] == name and body["direction"] == "maximize" and body["space"]["k"]["type"] == "int"
    assert body["last"] == 4 and datetime.fromisoformat(body["as_of"]).tzinfo is not None
    cols = body["trials"]
    assert cols["number"] == [1, 2, 3, 4]
    assert cols["state"] == ["complete", "failed", "complete", "running"]
    assert cols["value"] == [0.25, None, -1e-300, None]
    assert cols["reasons"] == {"2": "sensor, off"}
    assert cols["source"] == ["sobol"] * 4
    assert all(c is not None for c in cols["created"]) and cols["completed"][3] is None
    # x is the point in the unit cube, the same as the stored params map to
    export = api.get(f"{API}/{name}/export").json()["trials"]
    for x, trial, exported in zip(cols["x"], trials, export, strict=True):
        assert len(x) == 2 and all(0 <= u <= 1 for u in x)
        assert exported["params"] == trial["params"]
        assert x[0] * 10 == pytest.approx(trial["params"]["x"])
    # incremental: only what is above ?after=
    later = api.get(f"{API}/{name}/series", params={"after": 2}).json()
    assert later["trials"]["number"] == [3, 4] and later["last"] == 4
    empty = api.get(f"{API}/{name}/series", params={"after": 4}).json()
    assert empty["trials"]["number"] == [] and empty["last"] == 4


def test_series_values_keep_every_digit(api) -> None:
    """A double survives the series exactly (SQLite's JSON writes a REAL with 15 digits: 0.1 + 0.2 came back 0.3,
    and the largest double came back past it, as -Infinity in a browser)."""
    name = create(api)
    ask(api, name, 3)
    tricky = [0.1 + 0.2, -0.6999966, -1.5e308]
    for number, value in enumerate(tricky, start=1):
        tell(api, name, number, value=value)
    values = api.get(f"{API}/{name}/series").json()["trials"]["value"]
    assert values == tricky


def test_the_summary_says_the_cadence_and_the_leases_run_out(api) -> None:
    from localbo.storage.repository import studies, trials
    from sqlalchemy import select

    name = create(api)
    ask(api, name, 6)
    for number in range(1, 6):
        tell(api, name, number, value=float(number))
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert summary["typical_result_gap_s"] is not None and summary["typical_result_gap_s"] >= 0
    assert summary["n_lease_expired"] == 0
    engine = api.app.state.service.db
    with engine.begin() as conn:  # trial 6's lease ran out an hour ago, and no ask has swept it yet
        conn.execute(
            trials.update()
            .where(
                trials.c.number == 6,
                trials.c.study_id == select(studies.c.id).where(studies.c.name == name).scalar_subquery(),
            )
            .values(lease_expires_at=datetime.now(UTC) - timedelta(hours=1))
        )
    summary = api.get(f"{API}/{name}").json()["summary"]
    assert summary["n_lease_expired"] == 1 and summary["n_running"] == 1


def test_series_refuses_bad_input_and_unknown_studies(api) -> None:
    name = create(api)
    r = api.get(f"{API}/{name}/series", params={"after": -1})
    assert r.status_code == 422 and "after" in r.json()["detail"]
    r = api.get(f"{API}/{unique()}/series")
    assert r.status_code == 404 and "not found" in r.json()["detail"]


def test_summary_says_when_the_study_was_last_active(api) -> None:
    name = create(api)
    assert api.get(f"{API}/{name}").json()["summary"]["last_activity"] is None
    ask(api, name)
    asked = datetime.fromisoformat(api.get(f"{API}/{name}").json()["summary"]["last_activity"])
    tell(api, name, 1, value=1.0)
    told = datetime.fromisoformat(api.get(f"{API}/{name}").json()["summary"]["last_activity"])
    assert datetime.now(UTC) - timedelta(minutes=1) < asked <= told <= datetime.now(UTC)


def test_feed_sends_new_trials_then_only_changes(api) -> None:
    name = create(api)
    db = api.app.state.service.db
    ask(api, name, 2)
    tell(api, name, 1, value=3.0)
    feed = Feed(db, name, after=0)
    first = dict(feed.poll())
    assert decode(first["trials"])["number"] == [1, 2]
    assert decode(first["study"])["trial_count"] == 2
    assert feed.poll() == []  # nothing changed: nothing sent

    tell(api, name, 2, value=1.5)  # an open trial finishes
    ask(api, name)  # and a new one is asked
    cols = decode(dict(feed.poll())["trials"])
    assert cols["number"] == [2, 3] and cols["state"] == ["complete", "running"] and cols["value"] == [1.5, None]
    tell(api, name, 3, state="failed", reason="broke")
    cols = decode(dict(feed.poll())["trials"])
    assert cols["number"] == [3] and cols["reasons"] == {"3": "broke"}
    assert feed.poll() == []


def test_feed_catches_up_from_a_series_taken_earlier(api) -> None:
    """A viewer loads the series, then connects: what finished in between is not lost."""
    name = create(api)
    db = api.app.state.service.db
    ask(api, name, 3)
    tell(api, name, 1, value=1.0)
    series = api.get(f"{API}/{name}/series").json()
    tell(api, name, 2, value=2.0)  # between the series and the feed
    feed = Feed(db, name, after=series["last"], since=datetime.fromisoformat(series["as_of"]))
    cols = decode(dict(feed.poll())["trials"])
    assert 2 in cols["number"] and cols["value"][cols["number"].index(2)] == 2.0
    tell(api, name, 3, value=3.0)  # trial 3 was open when the feed started: it is watched
    assert decode(dict(feed.poll())["trials"])["number"] == [3]


def test_feed_says_when_the_study_is_gone(api) -> None:
    name = create(api)
    feed = Feed(api.app.state.service.db, name)
    feed.poll()
    assert api.delete(f"{API}/{name}").status_code == 204
    assert [event for event, _ in feed.poll()] == ["gone"]


def test_one_read_of_a_study_serves_viewers_at_their_own_cursors(api) -> None:
    """What a study's broadcast reads once, each viewer narrows to what it has not seen, as its own poll would."""
    name = create(api)
    db = api.app.state.service.db
    ask(api, name, 3)
    tell(api, name, 1, value=1.0)
    shared = Feed(db, name, after=None)  # the broadcast's: from now on
    assert shared.cursor == 3 and sorted(shared.open) == [2, 3]
    everything, newest = Feed(db, name, after=0), Feed(db, name, after=3)
    assert decode(dict(everything.poll())["trials"])["number"] == [1, 2, 3]
    assert [event for event, _ in newest.poll()] == ["study"]

    tell(api, name, 2, value=2.0)
    ahead = Feed(db, name, after=3)  # reads for itself after trial 2 finished (a viewer that caught up later)
    ahead.poll()
    tell(api, name, 3, state="failed", reason="broke")
    ask(api, name)
    change = shared.read()
    assert change.states == ((2, "complete"), (3, "failed"), (4, "running"))
    for viewer in (everything, newest):  # in step with the broadcast: its text as it is, built once
        events = dict(viewer.apply(change))
        assert events["trials"] is change.columns and decode(events["study"])["trial_count"] == 4
    narrowed = dict(ahead.apply(change))  # had trial 2 already: only 3 and 4, in the series' shape
    cols = decode(narrowed["trials"])
    assert cols["number"] == [3, 4] and cols["state"] == ["failed", "running"] and cols["reasons"] == {"3": "broke"}
    assert cols["as_of"] == change.as_of and list(cols) == list(decode(change.columns))
    series = api.get(f"{API}/{name}/series", params={"after": 2}).json()["trials"]
    assert {k: v for k, v in cols.items() if k != "as_of"} == series
    for viewer in (everything, newest, ahead):
        assert viewer.apply(change) == []  # seen: never twice
    assert everything.apply(Change(change.as_of, change.study)) == []  # the head unchanged: nothing to say

    assert api.delete(f"{API}/{name}").status_code == 204
    gone = shared.read()
    assert gone.study is None and [event for event, _ in everything.apply(gone)] == ["gone"]


def test_viewers_that_have_seen_the_same_share_the_work_of_a_change(api) -> None:
    name = create(api)
    db = api.app.state.service.db
    ask(api, name, 2)
    shared = Feed(db, name, after=None)
    viewers = [Feed(db, name, after=0) for _ in range(5)]
    for viewer in viewers:
        viewer.poll()  # each reads for itself: five states, equal
    assert len({id(viewer.seen) for viewer in viewers}) == 5
    tell(api, name, 1, value=1.0)
    change, same = shared.read(), weakref.WeakValueDictionary()
    told = [viewer.apply(change, same) for viewer in viewers]
    assert len(change.applied) == 1 and len({id(viewer.seen) for viewer in viewers}) == 1  # worked out once
    assert all(events is told[0] for events in told) and decode(dict(told[0])["trials"])["number"] == [1]
    tell(api, name, 2, value=2.0)
    change = shared.read()
    assert [decode(dict(viewer.apply(change, same))["trials"])["number"] for viewer in viewers] == [[2]] * 5
    assert len(change.applied) == 1


def test_studies_list_is_rebuilt_only_when_a_summary_changes_and_each_reader_sees_its_own(api) -> None:
    mine, other = create(api), create(api)
    studies = StudiesList(api.app.state.service, study_json)

    def listed(readable=lambda name: name != other) -> dict[str, dict]:  # noqa: ANN001
        snapshot = studies.poll()
        assert snapshot is not None
        return {s["name"]: s["summary"] for s in decode(snapshot.view(readable))["studies"]}

    first = listed()
    assert mine in first and other not in first and first[mine]["n_trials"] == 0
    assert studies.poll() is None
    trial = ask(api, mine)[0]
    assert listed()[mine]["n_running"] == 1
    assert studies.poll() is None
    tell(api, mine, trial["number"], value=0.5)
    snapshot = studies.poll()
    assert snapshot is not None and decode(snapshot.view(lambda name: name == mine))["studies"][0]["name"] == mine
    assert decode(snapshot.view(lambda name: False)) == {"studies": []}
    listed_all = decode(snapshot.view(lambda name: True))  # the same JSON as GET /studies
    assert listed_all == api.get(API).json()
    assert api.delete(f"{API}/{mine}").status_code == 204
    assert mine not in listed()


def test_local_policy_state_keeps_the_iterate_path() -> None:
    x = torch.tensor([0.25, 0.5])
    path = _extend_path([], 0, 0, x, {"event": "start", "trace_after": 0.1234567891, "array": [1, 2]})
    assert [p.model_dump() for p in path] == [
        {"t": 0, "n": 0, "x": [0.25, 0.5], "info": {"event": "start", "trace_after": 0.123457}}
    ]
    path = _extend_path(path, 0, 0, x, {"event": "retry"})  # a retried iteration replaces its entry
    assert [p.info["event"] for p in path] == ["retry"]
    d = 512
    for t in range(1, 20):
        path = _extend_path(path, t, t, torch.zeros(d), {})
    assert len(path) == PATH_FLOATS // d and path[-1].t == 19
