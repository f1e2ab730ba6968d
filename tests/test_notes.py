"""Notes (issue 27, item 6): a study's note and each trial's, written with the write scope through the API and
the client, read back with the study, its trials, the export and ``GET .../notes``; on SQLite and the real
Postgres. Bad notes are a 422 naming ``note`` and store nothing; an unknown trial is a 404 naming it."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import unique
from fastapi.testclient import TestClient
from harness.processes import ServerProcess
from test_bad_input import assert_error, unchanged

API = "/api/v1/studies"
SPACE = {"x": {"type": "float", "low": 0, "high": 10}}
CONTAMINATED = "sample 17 was contaminated — résumé ✓"  # any Unicode text


def made(api: Any, headers: dict[str, str] | None = None) -> str:
    """A study with trial 1 complete, trial 2 failed and trial 3 running."""
    name = unique("notes")
    r = api.post(API, json={"name": name, "space": SPACE, "policy": "random", "seed": 3}, headers=headers)
    assert r.status_code == 201, r.text
    assert api.post(f"{API}/{name}/ask", json={"count": 3}, headers=headers).status_code == 200
    assert api.post(f"{API}/{name}/trials/1/tell", json={"value": 0.25}, headers=headers).status_code == 200
    failed = {"state": "failed", "reason": "thermocouple"}
    assert api.post(f"{API}/{name}/trials/2/tell", json=failed, headers=headers).status_code == 200
    return name


def without_notes(value: Any) -> Any:
    """The JSON with every ``note`` and ``notes_version`` left out: what the notes must not change."""
    if isinstance(value, dict):
        return {k: without_notes(v) for k, v in value.items() if k not in ("note", "notes_version")}
    if isinstance(value, list):
        return [without_notes(v) for v in value]
    return value


def everything(api: Any, name: str) -> dict[str, Any]:
    return {
        "study": api.get(f"{API}/{name}").json(),
        "trials": api.get(f"{API}/{name}/trials").json(),
        "export": api.get(f"{API}/{name}/export").json(),
        "policy": api.get(f"{API}/{name}/policy").json(),
    }


def test_a_study_note_is_written_read_with_the_study_and_cleared(api) -> None:  # noqa: ANN001
    name = made(api)
    assert api.get(f"{API}/{name}").json()["note"] is None
    before = everything(api, name)
    r = api.put(f"{API}/{name}/note", json={"note": "new thermocouple from trial 40 on"})
    assert r.status_code == 200, r.text
    assert r.json() == {"note": "new thermocouple from trial 40 on", "notes_version": 1}
    assert api.get(f"{API}/{name}").json()["note"] == "new thermocouple from trial 40 on"
    listed = {s["name"]: s for s in api.get(API).json()["studies"]}
    assert listed[name]["note"] == "new thermocouple from trial 40 on"
    assert api.get(f"{API}/{name}/export").json()["study"]["note"] == "new thermocouple from trial 40 on"
    assert without_notes(everything(api, name)) == without_notes(before)  # nothing else changed
    for cleared in ("", "   \n", None):
        api.put(f"{API}/{name}/note", json={"note": "again"})
        r = api.put(f"{API}/{name}/note", json={"note": cleared})
        assert r.status_code == 200 and r.json()["note"] is None, r.text
        assert api.get(f"{API}/{name}").json()["note"] is None
    assert api.get(f"{API}/{name}/notes").json()["notes_version"] == 7  # one per write


def test_a_trial_note_is_written_in_every_state_and_read_wherever_the_trial_is(api) -> None:  # noqa: ANN001
    name = made(api)
    before = everything(api, name)
    for number in (1, 2, 3):  # complete, failed, running
        r = api.put(f"{API}/{name}/trials/{number}/note", json={"note": f"{CONTAMINATED} #{number}"})
        assert r.status_code == 200, r.text
        assert r.json()["number"] == number and r.json()["note"] == f"{CONTAMINATED} #{number}"
        assert api.get(f"{API}/{name}/trials/{number}").json()["note"] == f"{CONTAMINATED} #{number}"
    listed = api.get(f"{API}/{name}/trials").json()["trials"]
    assert [t["note"] for t in listed] == [f"{CONTAMINATED} #{n}" for n in (1, 2, 3)]
    assert api.get(f"{API}/{name}/best").json()["note"] == f"{CONTAMINATED} #1"
    assert [t["note"] for t in api.get(f"{API}/{name}/export").json()["trials"]] == [t["note"] for t in listed]
    rows = list(csv.DictReader(io.StringIO(api.get(f"{API}/{name}/export", params={"format": "csv"}).text)))
    assert [row["note"] for row in rows] == [t["note"] for t in listed]  # the lab's spreadsheet has them too
    api.put(f"{API}/{name}/trials/1/note", json={"note": "=HYPERLINK(1)"})
    first = next(csv.DictReader(io.StringIO(api.get(f"{API}/{name}/export", params={"format": "csv"}).text)))
    assert first["note"] == "'=HYPERLINK(1)", "a note is a text cell: never a spreadsheet formula"
    api.put(f"{API}/{name}/trials/1/note", json={"note": f"{CONTAMINATED} #1"})
    # the value, state, lease and the policy's state are as they were: a note is for people
    assert without_notes(everything(api, name)) == without_notes(before)
    notes = api.get(f"{API}/{name}/notes").json()
    assert notes == {"note": None, "trials": {str(n): f"{CONTAMINATED} #{n}" for n in (1, 2, 3)}, "notes_version": 5}
    # the running trial is still told as usual, and keeps its note
    told = api.post(f"{API}/{name}/trials/3/tell", json={"value": 0.5}).json()
    assert told["state"] == "complete" and told["note"] == f"{CONTAMINATED} #3"
    # cleared by an empty note or null
    assert api.put(f"{API}/{name}/trials/1/note", json={"note": ""}).json()["note"] is None
    assert api.put(f"{API}/{name}/trials/2/note", json={"note": None}).json()["note"] is None
    assert api.get(f"{API}/{name}/notes").json()["trials"] == {"3": f"{CONTAMINATED} #3"}


def test_a_note_of_2000_characters_is_kept_whole_and_a_longer_one_refused(api) -> None:  # noqa: ANN001
    name = made(api)
    longest = "x" * 1999 + "é"
    assert api.put(f"{API}/{name}/trials/1/note", json={"note": longest}).json()["note"] == longest
    assert api.put(f"{API}/{name}/note", json={"note": longest}).json()["note"] == longest
    with unchanged(api, name):
        for path in (f"{API}/{name}/note", f"{API}/{name}/trials/1/note"):
            assert_error(api.put(path, json={"note": "x" * 2001}), 422, "note", "2000")
            assert_error(api.put(path, json={"note": "a\u0000b"}), 422, "note", "NUL")
            assert_error(api.put(path, json={"note": 17}), 422, "note")
            assert_error(api.put(path, json={"note": ["a"]}), 422, "note")
            assert_error(api.put(path, json={}), 422, "note")
            assert_error(api.put(path, json={"note": "a", "extra": 1}), 422, "extra")
            bad = api.put(path, content=b'{"note": "\\udc80"}', headers={"content-type": "application/json"})
            assert_error(bad, 422, "note", "surrogate")


def test_a_note_on_an_unknown_trial_or_study_is_a_404_naming_it(api) -> None:  # noqa: ANN001
    name = made(api)
    with unchanged(api, name):
        r = api.put(f"{API}/{name}/trials/4/note", json={"note": "x"})
        assert r.status_code == 404 and "trial 4" in r.json()["detail"] and name in r.json()["detail"], r.text
        assert_error(api.put(f"{API}/{name}/trials/0/note", json={"note": "x"}), 422, "number")
        assert_error(api.put(f"{API}/{name}/trials/2147483648/note", json={"note": "x"}), 422, "number")
    gone = unique("none")
    for path in (f"{API}/{gone}/note", f"{API}/{gone}/trials/1/note"):
        r = api.put(path, json={"note": "x"})
        assert r.status_code == 404 and gone in r.json()["detail"], r.text
    for path in (f"{API}/{gone}/notes", f"{API}/{gone}/access"):
        assert api.get(path).status_code == 404
    assert api.get(f"{API}/{name}/notes").json()["notes_version"] == 0


def test_the_study_stream_says_when_notes_change(api) -> None:  # noqa: ANN001
    """Viewers learn of a note through the ``study`` event (its ``notes_version``), then read ``GET .../notes``."""
    from localbo.progress import Feed

    name = made(api)
    feed = Feed(api.app.state.service.db, name, after=3)
    first = dict(feed.poll())
    assert json.loads(first["study"])["notes_version"] == 0
    assert feed.poll() == []
    api.put(f"{API}/{name}/trials/1/note", json={"note": "contaminated"})
    events = dict(feed.poll())
    assert set(events) == {"study"} and json.loads(events["study"])["notes_version"] == 1
    api.put(f"{API}/{name}/note", json={"note": "paused for cleaning"})
    assert json.loads(dict(feed.poll())["study"])["notes_version"] == 2


def test_a_database_at_revision_0007_upgrades_and_its_trials_have_no_note(tmp_path: Path) -> None:
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings
    from localbo.storage.db import make_engine, upgrade
    from sqlalchemy import text

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    upgrade(engine, "0007")
    with engine.begin() as conn:
        columns = {row[1] for row in conn.execute(text("PRAGMA table_info(trials)"))}
    engine.dispose()
    assert "note" not in columns
    settings = Settings(database_url=url)
    prepare_database(settings)
    from localbo.api import create_app

    with TestClient(create_app(settings)) as api:
        name = made(api)
        assert api.get(f"{API}/{name}/notes").json() == {"note": None, "trials": {}, "notes_version": 0}
        assert api.put(f"{API}/{name}/trials/2/note", json={"note": "rerun"}).json()["note"] == "rerun"


# -- who may write notes -----------------------------------------------------------------------------------------

TOKENS = "adm=admin;rw=write:beam-*;ro=read:beam-*;other=read:zzz-*"
ADM, RW, RO, OTHER = ({"Authorization": f"Bearer {t}"} for t in ("adm", "rw", "ro", "other"))


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Any]:
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'auth.db'}", tokens=TOKENS)
    prepare_database(settings)
    with TestClient(create_app(settings)) as client:
        yield client


def beam(client: Any) -> str:
    name = unique("beam")
    assert client.post(API, json={"name": name, "space": SPACE, "policy": "random"}, headers=ADM).status_code == 201
    assert client.post(f"{API}/{name}/ask", json={"count": 1}, headers=ADM).status_code == 200
    return name


def test_a_read_only_token_reads_notes_and_may_not_write_them(guarded: Any) -> None:
    name = beam(guarded)
    guarded.put(f"{API}/{name}/trials/1/note", json={"note": "by the admin"}, headers=ADM)
    before = guarded.get(f"{API}/{name}/notes", headers=ADM).json()
    for path in (f"{API}/{name}/note", f"{API}/{name}/trials/1/note", f"{API}/{name}/trials/9/note"):
        r = guarded.put(path, json={"note": "by a reader"}, headers=RO)
        assert r.status_code == 403 and "token may not write study" in r.json()["detail"], r.text
        assert guarded.put(path, json={"note": "anonymous"}).status_code == 401
    assert guarded.get(f"{API}/{name}/notes", headers=RO).json() == before
    assert guarded.get(f"{API}/{name}/trials/1", headers=RO).json()["note"] == "by the admin"
    assert guarded.get(f"{API}/{name}/access", headers=RO).json() == {"read": True, "write": False}


def test_a_write_token_writes_notes_on_its_studies_only(guarded: Any) -> None:
    name = beam(guarded)
    assert guarded.get(f"{API}/{name}/access", headers=RW).json() == {"read": True, "write": True}
    assert guarded.put(f"{API}/{name}/note", json={"note": "mine"}, headers=RW).json()["note"] == "mine"
    r = guarded.put(f"{API}/{name}/trials/1/note", json={"note": "contaminated"}, headers=RW)
    assert r.status_code == 200 and r.json()["note"] == "contaminated", r.text
    other = unique("zzz")
    assert guarded.post(API, json={"name": other, "space": SPACE}, headers=ADM).status_code == 201
    for path in (f"{API}/{other}/note", f"{API}/{other}/trials/1/note"):
        r = guarded.put(path, json={"note": "not mine"}, headers=RW)
        assert r.status_code == 403 and other in r.json()["detail"], r.text
    for path in (f"{API}/{other}/notes", f"{API}/{other}/access"):
        assert guarded.get(path, headers=RW).status_code == 403
    assert guarded.get(f"{API}/{other}/access", headers=OTHER).json() == {"read": True, "write": False}
    assert guarded.get(f"{API}/{other}/notes", headers=ADM).json()["note"] is None


# -- the client ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("notes-server")
    server = ServerProcess(f"sqlite:///{folder / 'db.sqlite'}", LOCALBO_TOKENS=TOKENS)
    yield server
    server.stop()


def test_the_client_writes_and_reads_notes(server: ServerProcess) -> None:
    from localbo_client import BadRequest, Client, Forbidden, NotFound

    with Client(server.url, "rw", retries=0) as client:
        study = client.create_study(unique("beam"), {"x": {"type": "float", "low": 0, "high": 1}}, policy="random")
        assert study.note is None
        assert study.set_note("new thermocouple from trial 40 on") == "new thermocouple from trial 40 on"
        assert study.note == "new thermocouple from trial 40 on"
        assert client.get_study(study.name).note == "new thermocouple from trial 40 on"
        first, second = study.ask(count=2)
        first.tell(0.5)
        assert first.set_note(CONTAMINATED) is first and first.note == CONTAMINATED
        told = study.set_trial_note(second.number, "rerun tomorrow")
        assert told.number == second.number and told.note == "rerun tomorrow" and told.state == "running"
        assert second.note == "rerun tomorrow"  # the Trial it handed out learns it
        assert [(t.number, t.note) for t in study.trials()] == [(1, CONTAMINATED), (2, "rerun tomorrow")]
        assert study.notes() == {1: CONTAMINATED, 2: "rerun tomorrow"}
        assert study.set_trial_note(first, "").note is None and first.note is None
        assert study.set_note(None) is None and study.note is None
        with pytest.raises(BadRequest, match="note"):
            study.set_trial_note(2, "x" * 2001)
        with pytest.raises(NotFound, match="trial 9"):
            study.set_trial_note(9, "x")
        assert study.notes() == {2: "rerun tomorrow"}
    with Client(server.url, "ro", retries=0) as reader:
        seen = reader.get_study(study.name)
        with pytest.raises(Forbidden):
            seen.set_note("by a reader")
        with pytest.raises(Forbidden):
            seen.set_trial_note(2, "by a reader")
        assert seen.notes() == {2: "rerun tomorrow"}
