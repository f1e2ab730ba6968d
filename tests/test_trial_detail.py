"""One trial by its number, and a finite study's CSV export (what the dashboard's trial view and export link
read), through the API on SQLite and the real Postgres."""

from __future__ import annotations

import csv
import io

from conftest import unique
from test_bad_input import assert_error, unchanged

API = "/api/v1/studies"
SPACE = {
    "x": {"type": "float", "low": 0, "high": 10},
    "opt": {"type": "categorical", "choices": ["a", "b"]},
}


def create(api, space: dict, policy: str = "random") -> str:  # noqa: ANN001
    name = unique("detail")
    r = api.post(API, json={"name": name, "space": space, "policy": policy, "seed": 2})
    assert r.status_code == 201, r.text
    return name


def test_a_trial_by_number_is_the_trial_as_listed_in_every_state(api) -> None:  # noqa: ANN001
    name = create(api, SPACE)
    asked = api.post(f"{API}/{name}/ask", json={"count": 3, "client_id": "rig-7"}).json()["trials"]
    running = api.get(f"{API}/{name}/trials/{asked[0]['number']}")
    assert running.status_code == 200, running.text
    assert running.json() == asked[0]  # the lease, client and params in user units as the ask handed them out
    assert running.json()["client_id"] == "rig-7" and running.json()["lease_expires_at"] is not None
    api.post(f"{API}/{name}/trials/{asked[1]['number']}/tell", json={"value": 0.25})
    reason = "thermocouple 3 read open circuit; " * 50  # long reasons come back whole
    api.post(f"{API}/{name}/trials/{asked[2]['number']}/tell", json={"state": "failed", "reason": reason})
    listed = {t["number"]: t for t in api.get(f"{API}/{name}/trials").json()["trials"]}
    for number, trial in listed.items():
        assert api.get(f"{API}/{name}/trials/{number}").json() == trial
    assert listed[2]["state"] == "complete" and listed[2]["value"] == 0.25 and listed[2]["completed_at"]
    assert listed[3]["state"] == "failed" and listed[3]["reason"] == reason and listed[3]["lease_expires_at"] is None


def test_a_trial_not_there_is_a_404_naming_it_and_a_bad_number_a_422(api) -> None:  # noqa: ANN001
    name = create(api, SPACE)
    api.post(f"{API}/{name}/ask", json={})
    with unchanged(api, name):
        r = api.get(f"{API}/{name}/trials/2")
        assert r.status_code == 404 and "trial 2" in r.json()["detail"] and name in r.json()["detail"]
        assert_error(api.get(f"{API}/{name}/trials/0"), 422, "number")
        assert_error(api.get(f"{API}/{name}/trials/2147483648"), 422, "number")
        assert_error(api.get(f"{API}/{name}/trials/two"), 422, "number")
    assert "not found" in api.get(f"{API}/{unique('none')}/trials/1").json()["detail"]


FINITE = [
    {"id": 'a,"1"', "params": {"temp C": 20.5, "n": 3}},
    {"id": "b2", "params": {"temp C": 40.0, "n": 1}},
    {"id": "c 3", "params": {"temp C": 60.25, "n": 2}},
    {"id": "d4", "params": {"temp C": 80.0, "n": 5}},
]


def test_a_finite_studys_csv_has_its_parameters_and_candidate_ids(api) -> None:  # noqa: ANN001
    name = create(api, {"kind": "finite", "candidates": FINITE})
    asked = api.post(f"{API}/{name}/ask", json={"count": 3}).json()["trials"]
    api.post(f"{API}/{name}/trials/{asked[0]['number']}/tell", json={"value": 1.5})
    api.post(f"{API}/{name}/trials/{asked[1]['number']}/tell", json={"state": "failed", "reason": "a, b"})
    taken = {t["candidate"] for t in asked}
    (left,) = [c for c in FINITE if c["id"] not in taken]
    r = api.post(f"{API}/{name}/trials", json={"params": left["params"], "value": -2.0})
    assert r.status_code == 201 and r.json()["candidate"] == left["id"]
    export = api.get(f"{API}/{name}/export", params={"format": "csv"})
    assert export.status_code == 200 and export.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(export.text)))
    assert rows[0] == [
        "number", "state", "value", "temp C", "n", "candidate", "source", "reason", "created_at", "completed_at",
        "note",
    ]  # fmt: skip
    by_id = {c["id"]: c["params"] for c in FINITE}
    trials = {t["number"]: t for t in api.get(f"{API}/{name}/trials").json()["trials"]}
    assert [int(row[0]) for row in rows[1:]] == sorted(trials) == [1, 2, 3, 4]
    for row in rows[1:]:
        record = dict(zip(rows[0], row, strict=True))
        trial = trials[int(record["number"])]
        params = by_id[record["candidate"]]
        assert record["candidate"] == trial["candidate"]
        assert float(record["temp C"]) == params["temp C"] and int(record["n"]) == params["n"]
        assert record["state"] == trial["state"] and record["reason"] == (trial["reason"] or "")
        assert record["value"] == ("" if trial["value"] is None else repr(trial["value"]))
    assert sum(1 for row in rows[1:] if row[5] == left["id"] and row[2] == "-2.0") == 1
    exported = api.get(f"{API}/{name}/export", params={"format": "json"}).json()
    assert [t["candidate"] for t in exported["trials"]] == [trials[n]["candidate"] for n in sorted(trials)]
