"""A client generated from the live ``/openapi.json`` by openapi-python-client works (issue 16, item 5).

The generator runs offline on the document a live server (SQLite, a token configured) serves, with
``--fail-on-warning``; the generated package is imported and, with its ``AuthenticatedClient``, creates
studies, asks, tells (complete and failed), reads 4xx answers as its typed ``ErrorOut`` and exports CSV.
``raise_on_unexpected_status`` makes any status the document does not list fail the test.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from harness.processes import ServerProcess

pytestmark = pytest.mark.live

TOKEN = "generated-client-token"
PACKAGE = "localbo_generated_client"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("server")
    live = ServerProcess(
        f"sqlite:///{tmp / 'localbo.db'}", log_path=tmp / "server.log", LOCALBO_TOKENS=f"{TOKEN}=admin"
    )
    yield live
    live.stop()


@pytest.fixture(scope="module")
def gen(server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated package, imported from a temporary folder (removed from ``sys.path`` afterwards)."""
    tmp = tmp_path_factory.mktemp("generated")
    document = tmp / "openapi.json"
    document.write_text(httpx.get(f"{server.url}/openapi.json", timeout=30).text)
    config = tmp / "config.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: the code is only imported
    done = subprocess.run(
        [str(GENERATOR), "generate", "--path", str(document), "--output-path", str(tmp / PACKAGE)]
        + ["--meta", "none", "--config", str(config), "--fail-on-warning"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    sys.path.insert(0, str(tmp))
    try:
        package = importlib.import_module(PACKAGE)
        importlib.import_module(f"{PACKAGE}.models")  # then package.models
        yield package
    finally:
        sys.path.remove(str(tmp))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def api(gen: ModuleType, group: str, operation: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.api.{group}.{operation}")


@pytest.fixture(scope="module")
def client(gen: ModuleType, server: ServerProcess) -> Iterator[Any]:
    with gen.AuthenticatedClient(base_url=server.url, token=TOKEN, raise_on_unexpected_status=True) as c:
        yield c


def mixed_space(models: Any) -> Any:
    space = models.Space()
    space["x"] = models.FloatParam(type_="float", low=0.0, high=1.0)
    space["n"] = models.IntParam(type_="int", low=1, high=5)
    space["opt"] = models.CategoricalParam(type_="categorical", choices=["sgd", "adam"])
    return space


def test_create_ask_tell_and_export_csv(gen: ModuleType, client: Any) -> None:
    m = gen.models
    body = m.StudyCreate(
        name="generated", space=mixed_space(m), policy=m.StudyCreatePolicy("sobol"), metadata=m.Metadata()
    )
    body.metadata["owner"] = "lab-3"
    created = api(gen, "studies", "create_study").sync_detailed(client=client, body=body)
    assert created.status_code == 201, created.content
    study = created.parsed
    assert isinstance(study, m.StudyOut) and study.name == "generated" and study.metadata["owner"] == "lab-3"
    assert isinstance(study.space, m.Space) and isinstance(study.space["n"], m.IntParam)

    asked = api(gen, "trials", "ask").sync_detailed("generated", client=client, body=m.AskRequest(count=2))
    assert asked.status_code == 200, asked.content
    first, second = asked.parsed.trials
    assert 0.0 <= first.params["x"] <= 1.0 and first.params["opt"] in ("sgd", "adam")

    tell = api(gen, "trials", "tell")
    done = tell.sync_detailed("generated", first.number, client=client, body=m.TellComplete(value=0.25))
    assert done.status_code == 200 and done.parsed.state == m.TrialOutState.COMPLETE and done.parsed.value == 0.25
    failed = m.TellFailed(state="failed", reason="diverged")
    done = tell.sync_detailed("generated", second.number, client=client, body=failed)
    assert done.status_code == 200 and done.parsed.state == m.TrialOutState.FAILED
    assert done.parsed.reason == "diverged"

    best = api(gen, "trials", "best").sync("generated", client=client)
    assert isinstance(best, m.TrialOut) and best.number == first.number
    listed = api(gen, "trials", "list_trials").sync("generated", client=client)
    assert [t.number for t in listed.trials] == [first.number, second.number] and listed.next_after is None
    summary = api(gen, "studies", "get_study").sync("generated", client=client).summary
    assert (summary.n_complete, summary.n_failed, summary.best_value) == (1, 1, 0.25)

    export = api(gen, "trials", "export")
    csv = export.sync("generated", client=client, format_=m.ExportFormat.CSV)
    header, *rows = csv.splitlines()
    assert header.startswith("number,state,value") and len(rows) == 2
    as_json = json.loads(export.sync("generated", client=client, format_=m.ExportFormat.JSON))
    assert len(as_json["trials"]) == 2


def test_an_ask_with_no_body_takes_the_defaults(gen: ModuleType, client: Any) -> None:
    """The document has the ask body as a plain optional AskRequest (issue 26, item 8): called without one,
    the client sends none (given anyOf [AskRequest, null], it crashed JSON-encoding its UNSET)."""
    m = gen.models
    body = m.StudyCreate(name="no-body", space=mixed_space(m), policy=m.StudyCreatePolicy("sobol"))
    assert api(gen, "studies", "create_study").sync_detailed(client=client, body=body).status_code == 201
    asked = api(gen, "trials", "ask").sync_detailed("no-body", client=client)
    assert asked.status_code == 200, asked.content
    assert len(asked.parsed.trials) == 1 and asked.parsed.trials[0].state == m.TrialOutState.RUNNING


def test_errors_are_read_as_the_typed_error_model(gen: ModuleType, client: Any, server: ServerProcess) -> None:
    m = gen.models
    missing = api(gen, "studies", "get_study").sync_detailed("no-such-study", client=client)
    assert missing.status_code == 404 and isinstance(missing.parsed, m.ErrorOut)
    assert "no-such-study" in missing.parsed.detail

    space = m.Space()
    space["x"] = m.FloatParam(type_="float", low=1.0, high=0.0)  # high < low: a rule no schema states
    refused = api(gen, "studies", "create_study").sync_detailed(
        client=client, body=m.StudyCreate(name="bad", space=space)
    )
    assert refused.status_code == 422 and isinstance(refused.parsed, m.ErrorOut)
    assert refused.parsed.detail.startswith("space.x.high:")

    loose = m.AskRequest(count="5")  # a string where the document says integer: strict input refuses it
    refused = api(gen, "trials", "ask").sync_detailed("no-such-study", client=client, body=loose)
    assert refused.status_code == 422 and isinstance(refused.parsed, m.ErrorOut)
    assert [(e.field, type(e)) for e in refused.parsed.errors] == [("count", m.FieldError)]

    tell = api(gen, "trials", "tell")
    unknown = tell.sync_detailed("no-such-study", 1, client=client, body=m.TellComplete(value=1.0))
    assert unknown.status_code == 404 and isinstance(unknown.parsed, m.ErrorOut)

    with gen.Client(base_url=server.url, raise_on_unexpected_status=True) as anonymous:
        denied = api(gen, "studies", "list_studies").sync_detailed(client=anonymous)
    assert denied.status_code == 401 and isinstance(denied.parsed, m.ErrorOut)


def test_finite_spaces_and_policy_configs_round_trip(gen: ModuleType, client: Any) -> None:
    m = gen.models
    candidates = [m.Candidate(params=m.CandidateParams(), id=name) for name in ("a", "b", "c")]
    for value, candidate in enumerate(candidates):
        candidate.params["x"] = value / 2
    finite = m.FiniteCandidates(kind="finite", candidates=candidates)
    config = m.GPUCBConfig(beta=3.5)
    body = m.StudyCreate(name="generated-finite", space=finite, policy=m.StudyCreatePolicy("ucb"), policy_config=config)
    created = api(gen, "studies", "create_study").sync_detailed(client=client, body=body)
    assert created.status_code == 201, created.content
    study = api(gen, "studies", "get_study").sync("generated-finite", client=client)
    assert isinstance(study.space, m.FiniteSummary) and study.space.candidates == 3
    assert study.policy_config["beta"] == 3.5  # every key kept, whichever policy's config it is
