"""Bearer tokens and scopes: who may do what, and the refusals (401 who are you, 403 not yours).

On SQLite only: authorisation does not touch the storage backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import unique
from fastapi.testclient import TestClient

API = "/api/v1/studies"
TOKENS = "adm=admin;rw=write:beam-*;ro=read:beam-*;other=read:zzz-*"
SPACE = {"x": {"type": "float", "low": 0, "high": 1}, "n": {"type": "int", "low": 1, "high": 4}}
PARAMS = {"x": 0.5, "n": 2}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


ADM, RW, RO, OTHER = bearer("adm"), bearer("rw"), bearer("ro"), bearer("other")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Any]:
    from localbo.api import create_app
    from localbo.bootstrap import prepare_database
    from localbo.config import Settings

    settings = Settings(database_url=f"sqlite:///{tmp_path / 'auth.db'}", tokens=TOKENS)
    prepare_database(settings)
    app = create_app(settings)
    with TestClient(app) as test_client:
        yield test_client


def create(client: Any, name: str, headers: dict[str, str]) -> Any:
    return client.post(API, json={"name": name, "space": SPACE, "policy": "random"}, headers=headers)


def made(client: Any, name: str, headers: dict[str, str] = ADM) -> str:
    """A study with trial 1 complete and trial 2 running."""
    assert create(client, name, headers).status_code == 201
    assert client.post(f"{API}/{name}/ask", json={"count": 2}, headers=headers).status_code == 200
    assert client.post(f"{API}/{name}/trials/1/tell", json={"value": 0.5}, headers=headers).status_code == 200
    return name


def snapshot(client: Any, name: str) -> dict[str, Any]:
    """The study as the admin sees it (used to show that refused requests changed nothing)."""
    out = {}
    for part in ("", "/trials", "/export"):
        resp = client.get(f"{API}/{name}{part}", headers=ADM)
        assert resp.status_code == 200, resp.text
        out[part] = resp.json()
    return out


def routes(name: str) -> list[tuple[str, str, dict | None]]:
    """Every route but /healthz, as (method, path, JSON body), aimed at study ``name``."""
    return [
        ("POST", API, {"name": f"{name}-new", "space": SPACE}),
        ("GET", API, None),
        ("GET", f"{API}/{name}", None),
        ("POST", f"{API}/{name}/ask", {"count": 1}),
        ("POST", f"{API}/{name}/trials/2/heartbeat", None),
        ("POST", f"{API}/{name}/trials/2/tell", {"value": 1.0}),
        ("POST", f"{API}/{name}/trials", {"params": PARAMS, "value": 1.0}),
        ("GET", f"{API}/{name}/trials", None),
        ("GET", f"{API}/{name}/best", None),
        ("GET", f"{API}/{name}/export", None),
        ("DELETE", f"{API}/{name}", None),
    ]


ROUTE_IDS = "create list get ask heartbeat tell add-trial list-trials best export delete".split()


def call(client: Any, method: str, path: str, body: dict | None, headers: dict[str, str] | None = None) -> Any:
    return client.request(method, path, json=body, headers=headers or {})


# -- 401: who are you --------------------------------------------------------------------------


def test_healthz_needs_no_token(client: Any) -> None:
    resp = client.get("/healthz")
    assert resp.status_code == 200, resp.text
    assert resp.json()["status"] == "ok"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "expected 'Bearer <token>'"),
        (bearer("nope"), "unknown token"),
        (bearer("adm2"), "unknown token"),
        (bearer("ad"), "unknown token"),
        ({"Authorization": "Basic eHl6"}, "expected 'Bearer <token>'"),
        ({"Authorization": "Bearer"}, "expected 'Bearer <token>'"),
        ({"Authorization": "Bearer "}, "expected 'Bearer <token>'"),
        ({"Authorization": "adm"}, "expected 'Bearer <token>'"),
        ({"Authorization": "Token adm"}, "expected 'Bearer <token>'"),
    ],
    ids=["none", "unknown", "longer", "prefix", "basic", "scheme-only", "empty-token", "no-scheme", "other-scheme"],
)
def test_every_route_but_healthz_needs_a_valid_token(client: Any, headers: dict[str, str], expected: str) -> None:
    name = made(client, unique("beam"))
    before = snapshot(client, name)
    for route, (method, path, body) in zip(ROUTE_IDS, routes(name), strict=True):
        resp = call(client, method, path, body, headers)
        assert resp.status_code == 401, (route, resp.text)
        assert resp.json()["detail"] == f"Authorization: {expected}", route
        assert resp.headers["www-authenticate"] == "Bearer", route
    assert snapshot(client, name) == before
    assert client.get(f"{API}/{name}-new", headers=ADM).status_code == 404


def test_no_token_is_401_even_with_a_malformed_body(client: Any) -> None:
    """Authentication comes first: an anonymous caller learns nothing from validating its body."""
    name = made(client, unique("beam"))
    json_type = {"content-type": "application/json"}
    for path in (API, f"{API}/{name}/ask", f"{API}/{name}/trials/2/tell", f"{API}/{name}/trials"):
        resp = client.post(path, content=b'{"value": ', headers=json_type)
        assert resp.status_code == 401, (path, resp.text)


# -- admin -------------------------------------------------------------------------------------


def test_admin_can_do_everything(client: Any) -> None:
    for prefix in ("beam", "zzz", "other"):
        name = unique(prefix)
        responses = [call(client, method, path, body, ADM) for method, path, body in routes(made(client, name))]
        codes = [r.status_code for r in responses]
        assert codes == [201, 200, 200, 200, 200, 200, 201, 200, 200, 200, 204], [r.text for r in responses]
        assert client.get(f"{API}/{name}", headers=ADM).status_code == 404  # deleted last
        assert client.get(f"{API}/{name}-new", headers=ADM).status_code == 200


# -- write:beam-* ------------------------------------------------------------------------------


def test_writer_works_on_its_own_studies(client: Any) -> None:
    name = made(client, unique("beam"), RW)
    trial = client.post(f"{API}/{name}/ask", json={"count": 1}, headers=RW)
    assert trial.status_code == 200, trial.text
    number = trial.json()["trials"][0]["number"]
    assert client.post(f"{API}/{name}/trials/{number}/heartbeat", headers=RW).status_code == 200
    assert client.post(f"{API}/{name}/trials/{number}/tell", json={"value": 0.1}, headers=RW).status_code == 200
    failed = {"state": "failed", "reason": "r"}
    assert client.post(f"{API}/{name}/trials/2/tell", json=failed, headers=RW).status_code == 200
    assert client.post(f"{API}/{name}/trials", json={"params": PARAMS, "value": 0.3}, headers=RW).status_code == 201
    assert client.get(f"{API}/{name}", headers=RW).json()["summary"]["n_complete"] == 3
    assert client.get(f"{API}/{name}/best", headers=RW).json()["value"] == 0.1
    assert len(client.get(f"{API}/{name}/trials", headers=RW).json()["trials"]) == 4
    assert client.get(f"{API}/{name}/export", params={"format": "csv"}, headers=RW).status_code == 200
    assert name in [s["name"] for s in client.get(API, headers=RW).json()["studies"]]
    assert client.delete(f"{API}/{name}", headers=RW).status_code == 204
    assert client.get(f"{API}/{name}", headers=ADM).status_code == 404


def test_writer_is_refused_other_studies(client: Any) -> None:
    name = made(client, unique("other"))
    before = snapshot(client, name)
    for route, (method, path, body) in zip(ROUTE_IDS, routes(name), strict=True):
        resp = call(client, method, path, body, RW)
        if route == "list":
            assert resp.status_code == 200
            assert name not in [s["name"] for s in resp.json()["studies"]]
        else:
            assert resp.status_code == 403, (route, resp.text)
            assert "token may not" in resp.json()["detail"], route
            assert name in resp.json()["detail"], route
    assert snapshot(client, name) == before
    assert client.get(f"{API}/{name}-new", headers=ADM).status_code == 404


# -- read:beam-* -------------------------------------------------------------------------------


def test_reader_reads_but_does_not_write(client: Any) -> None:
    name = made(client, unique("beam"))
    before = snapshot(client, name)
    assert client.get(f"{API}/{name}", headers=RO).json()["name"] == name
    assert [t["number"] for t in client.get(f"{API}/{name}/trials", headers=RO).json()["trials"]] == [1, 2]
    assert client.get(f"{API}/{name}/best", headers=RO).json()["value"] == 0.5
    assert client.get(f"{API}/{name}/export", params={"format": "json"}, headers=RO).json()["study"]["name"] == name
    assert client.get(f"{API}/{name}/export", params={"format": "csv"}, headers=RO).text.startswith("number,")
    assert name in [s["name"] for s in client.get(API, headers=RO).json()["studies"]]
    refused = [
        create(client, unique("beam"), RO),
        client.post(f"{API}/{name}/ask", json={"count": 1}, headers=RO),
        client.post(f"{API}/{name}/trials/2/tell", json={"value": 1.0}, headers=RO),
        client.post(f"{API}/{name}/trials/2/tell", json={"state": "failed", "reason": "x"}, headers=RO),
        client.post(f"{API}/{name}/trials/2/heartbeat", headers=RO),
        client.post(f"{API}/{name}/trials", json={"params": PARAMS, "value": 1.0}, headers=RO),
        client.delete(f"{API}/{name}", headers=RO),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused), [r.text for r in refused]
    assert all("token may not write study" in r.json()["detail"] for r in refused)
    assert snapshot(client, name) == before


def test_reader_is_refused_studies_outside_its_pattern(client: Any) -> None:
    name = made(client, unique("other"))
    for part in ("", "/trials", "/best", "/export"):
        resp = client.get(f"{API}/{name}{part}", headers=RO)
        assert resp.status_code == 403, resp.text
        assert resp.json()["detail"] == f"token may not read study {name!r}"


def test_list_shows_only_readable_studies(client: Any) -> None:
    zzz = [made(client, unique("zzz")), made(client, unique("zzz"))]
    beam = [made(client, unique("beam"), RW), made(client, unique("beam"))]
    other = [made(client, unique("other"))]

    def listed(headers: dict[str, str]) -> set[str]:
        resp = client.get(API, headers=headers)
        assert resp.status_code == 200, resp.text
        return {s["name"] for s in resp.json()["studies"]}

    assert listed(OTHER) == set(zzz)
    assert listed(RO) == set(beam)
    assert listed(RW) == set(beam)
    assert listed(ADM) == set(zzz + beam + other)
    assert client.get(f"{API}/{zzz[0]}", headers=OTHER).status_code == 200
    assert client.get(f"{API}/{beam[0]}", headers=OTHER).status_code == 403
    assert client.post(f"{API}/{zzz[0]}/ask", json={"count": 1}, headers=OTHER).status_code == 403


def test_unknown_study_is_403_not_404_without_read_access(client: Any) -> None:
    """A token learns nothing about studies outside its patterns, not even whether they exist."""
    assert client.get(f"{API}/other-missing", headers=RO).status_code == 403
    assert client.get(f"{API}/beam-missing", headers=RO).status_code == 404


# -- configuration -----------------------------------------------------------------------------


def test_parse_tokens_reads_scopes() -> None:
    from localbo.api.auth import Principal, parse_tokens

    tokens = parse_tokens(" a=admin ; b=write:beam-*,read:* ;c=read:x-?;")
    assert tokens == {
        "a": Principal(admin=True),
        "b": Principal(admin=False, read=("*",), write=("beam-*",)),
        "c": Principal(admin=False, read=("x-?",)),
    }
    assert tokens["b"].can_write("beam-1") and not tokens["b"].can_write("other-1") and tokens["b"].can_read("other")
    assert tokens["c"].can_read("x-1") and not tokens["c"].can_read("x-12") and not tokens["c"].can_write("x-1")
    assert parse_tokens("") == {} and parse_tokens(" ; ") == {}


@pytest.mark.parametrize(
    "spec",
    [
        "adm",
        "=admin",
        " =admin",
        "t=superuser",
        "t=read",
        "t=read:",
        "t=write:",
        "t=admin:beam-*",
        "t=delete:beam-*",
        "a=admin;b",
    ],
)
def test_parse_tokens_rejects_bad_specs(spec: str) -> None:
    from localbo.api.auth import parse_tokens

    with pytest.raises(ValueError, match="LOCALBO_TOKENS"):
        parse_tokens(spec)


def test_create_app_rejects_bad_tokens(tmp_path: Path) -> None:
    from localbo.api import create_app
    from localbo.config import Settings

    with pytest.raises(ValueError, match="LOCALBO_TOKENS"):
        create_app(Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}", tokens="t=root"))


def test_cli_refuses_a_non_loopback_bind_without_tokens(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALBO_TOKENS", "LOCALBO_HOST")}
    proc = subprocess.run(
        [sys.executable, "-m", "localbo.cli", "serve", "--host", "0.0.0.0", "--port", "0", "--db", f"sqlite:///{db}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "LOCALBO_TOKENS" in proc.stderr
    assert "0.0.0.0" in proc.stderr
    assert not db.exists()  # refused before touching the database
