"""The documentation site (issue 20, item 2): it builds with ``--strict``, its generated pages say
what the code says, and the tutorials' code runs against a real server."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness.processes import ServerProcess

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def code_blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", (DOCS / page).read_text(), flags=re.S | re.M)


def text_of(markup: str) -> str:
    """What a reader sees of some HTML: tags dropped, entities decoded, blanks collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", markup)).split())


def table_rows(page: str, table: int = 0) -> list[list[str]]:
    """The cells of a page's ``table``-th table, row by row, as text."""
    markup = re.findall(r"<table>(.*?)</table>", page, flags=re.S)[table]
    return [
        [text_of(cell) for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, flags=re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", markup, flags=re.S)
    ]


@pytest.fixture(scope="module")
def server(sqlite_server: ServerProcess) -> ServerProcess:
    return sqlite_server


def test_the_site_builds_strictly_with_its_generated_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    # the entry point `make docs` runs: under `python -m mkdocs` its warnings go to a logger nothing prints
    mkdocs = Path(sys.executable).with_name("mkdocs")
    command = [str(mkdocs)] if mkdocs.exists() else [sys.executable, "-m", "mkdocs"]
    done = subprocess.run(
        [*command, "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Warning" not in done.stderr, done.stderr[-3000:]  # issue 28, item 8: a dependency's warnings filtered
    rest = (site / "reference" / "rest" / "index.html").read_text()
    # the document as the site's build sees it: in a fresh process (the suite registers toy policies of its own)
    spec = json.loads(
        subprocess.run(
            [sys.executable, "-c", "import json; from localbo.api import create_app; from localbo.config import "
             "Settings; print(json.dumps(create_app(Settings(database_url='sqlite://')).openapi()))"],
            cwd=ROOT, capture_output=True, text=True, timeout=240, check=True,
        ).stdout
    )  # fmt: skip
    for path in spec["paths"]:
        assert path.replace("{", "").replace("}", "") in rest.replace("{", "").replace("}", ""), path
    # issue 28, item 4: every field with its type, default and meaning, and an example per route
    for word in ("direction", "wait_seconds", "low", "reference_point", "max_violation_probability", "client_id",
                 "lease_expires_at", "next_after", "hypervolume", "Idempotency-Key"):  # fmt: skip
        assert f"<code>{word}</code>" in rest, word
    for schema in spec["components"]["schemas"].values():
        for field in schema.get("properties", {}):
            assert f"<code>{field}</code>" in rest, field
    routes = sum(len(operations) for operations in spec["paths"].values())
    assert rest.count(">Example<") == routes, "one example request and answer per route"
    assert "Whether lower (minimize) or higher (maximize) values are better" in rest
    assert "POST /api/v1/studies/furnace/ask" in rest and "rig-7" in rest
    # the docs home: a quick start for users, no word of this machine or of fuzzing
    home = (site / "index.html").read_text()
    assert "2-core" not in home and "fuzz" not in home.lower() and "make run" in home
    assert 'policy="minucb"' in html.unescape(re.sub(r"<[^>]+>", "", home)), "the first study, a local policy"
    development = (site / "development" / "index.html").read_text()
    assert "make fuzz" in development and "torch==2.13.0" in development
    benchmarks = (site / "development-benchmarks" / "index.html").read_text()
    assert benchmarks.count("as its script wrote it") == 5
    configuration = (site / "reference" / "configuration" / "index.html").read_text()
    from localbo.config import Settings

    # issue 28, item 6: one row a setting, four cells each (a `|` in a description splits none), every setting
    # described, defaults as the environment spells them, `*` in token patterns literal (not emphasis)
    rows = {row[0].split(",")[0]: row for row in table_rows(configuration)[1:]}
    assert list(rows) == [f"LOCALBO_{name.upper()}" for name in Settings.model_fields]
    for variable, (_, default, takes, meaning) in rows.items():
        assert meaning and takes, f"{variable} has no description"
        assert not re.fullmatch(r"True|False|None|-?\d+\.0|'.*'|\".*\"", default), f"{variable}: {default}"
    assert "tok2=write:beam-*,read:*" in rows["LOCALBO_TOKENS"][3] and "<em>" not in configuration
    assert "auto | cpu | cuda" in rows["LOCALBO_DEVICE"][3]
    assert rows["LOCALBO_LEASE_SECONDS"][1] == "3600" and rows["LOCALBO_SUGGEST_AHEAD"][1] == "true"
    choosing = (site / "choosing-a-policy" / "index.html").read_text()
    assert "as its script wrote it" in choosing and "la-minucb" in choosing
    # issue 28, item 7: under each table, what its ± is; the gp100 table is the league's, as the README quotes it
    for caption in re.findall(r"<em>From (.*?)</em>", choosing):
        source = text_of(caption)
        if "league.md" in source:
            assert "± is the standard error of the mean" in source, source
        elif "synthetic.md" in source or "mujoco.md" in source:
            assert "± is the standard deviation" in source, source
    tables = [table_rows(choosing, i) for i in range(choosing.count("<table>"))]
    (line,) = re.findall(r"^gp100: (.*)\.$", (ROOT / "README.md").read_text(), flags=re.M)
    in_readme = {m: float(v) for m, v in re.findall(r"([\w-]+) (-?[\d.e+-]+)(?: \(\d+ evaluations\))?(?:, |$)", line)}
    league_tables = [rows for rows in tables if rows[0][-1] == "from" and len(rows) > 1]
    (gp100,) = [rows for rows in league_tables if [row[0] for row in rows[1:]] == list(in_readme)]
    on_page = {row[0]: float(row[3].split(" ± ")[0]) for row in gp100[1:]}
    for method, value in on_page.items():
        assert abs(value - in_readme[method]) <= 0.006 * abs(value), (method, value, in_readme[method])
    # the figures are the benchmark scripts' own PNGs, served beside the pages (not copies in docs/)
    figures = re.findall(r'<img alt="[^"]*" src="\.\./results/([\w.-]+\.png)"', choosing)
    assert "synthetic_gp25.png" in figures and "mujoco_hopper.png" in figures, figures
    for figure in figures:
        assert (site / "results" / figure).read_bytes() == (ROOT / "benchmarks" / "results" / figure).read_bytes()
    client = (site / "reference" / "client" / "index.html").read_text()
    assert "optimize" in client and "create_study" in client
    # issue 28, item 5: every public name under its own heading (mkdocstrings hides a member without a docstring),
    # each method, property and function with an example
    for anchor, needs_example in client_reference_names().items():
        start = client.find(f'id="{anchor}"')
        assert start >= 0, f"{anchor} is missing from the client reference"
        end = client.find('class="doc doc-heading"', client.find("</h", start))  # the next object's heading
        assert not needs_example or "<pre>" in client[start:end], f"{anchor} has no example"
    import localbo_client

    for name in localbo_client.__all__:
        assert re.search(rf'id="localbo_client\.[\w.]*\.{name}"', client), f"{name} is not in the client reference"
    assert "LocalBOSampler" in client
    # constraints (issue 30): every name the client added for them
    for name in ("Objective", "OutcomeConstraint", "ParameterConstraint", "Safety", "Failures", "result_body"):
        assert name in client, name
    for words in ("parameter_constraints", "feasible", "constraints_func", "n_constraints"):
        assert words in client, words


def client_reference_names() -> dict[str, bool]:
    """The anchors the client reference must have, each with whether it needs an example: every public name of a
    ``Client``, a ``Study`` and a ``Trial`` (methods, properties, fields, the attributes an instance sets), and
    every public function and class of the modules the page renders whole (``::: localbo_client.NAME``)."""
    import importlib
    import inspect

    from localbo_client import Client, Study, Trial

    names: dict[str, bool] = {}
    client = Client("http://127.0.0.1:9")  # a pool; nothing is sent
    try:
        objects = {Client: client, Study: Study(client, {"name": "beam"}), Trial: Trial(1, {}, "running")}
        for cls, instance in objects.items():
            for name in dir(instance):
                if not name.startswith("_"):
                    member = inspect.getattr_static(cls, name, None)
                    callable_ = callable(member) or isinstance(member, (property, classmethod, staticmethod))
                    names[f"{cls.__module__}.{cls.__name__}.{name}"] = callable_
    finally:
        client.close()
    page = (DOCS / "reference" / "client.md").read_text()
    for target in re.findall(r"^::: ([\w.]+)$", page, flags=re.M):
        try:
            module = importlib.import_module(target)
        except ImportError:
            continue  # a class rendered alone: Client, Study, Trial above
        for name, member in vars(module).items():
            if not name.startswith("_") and getattr(member, "__module__", None) == target:
                if inspect.isfunction(member):
                    names[f"{target}.{name}"] = True
                elif inspect.isclass(member):
                    names[f"{target}.{name}"] = False
    return names


@pytest.mark.parametrize(
    "page",
    [
        "tutorials/simulator.md",
        "tutorials/finite.md",
        "tutorials/reactor-with-limits.md",
        "tutorials/yield-against-cost.md",
        "optuna.md",
    ],
)
def test_a_python_tutorial_runs_as_written(page: str, server: ServerProcess, tmp_path: Path) -> None:
    (code,) = code_blocks(page, "python")
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "LOCALBO_URL": server.url},
        capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, f"{page}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


def test_the_lab_rig_tutorial_runs_in_bash(server: ServerProcess, tmp_path: Path) -> None:
    blocks = code_blocks("tutorials/lab-rig.md", "bash")
    assert len(blocks) == 2
    outputs = []
    for block in blocks:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block], env={**os.environ, "LOCALBO_URL": server.url},
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
        outputs.append(done.stdout)
    assert len(re.findall(r"^trial \d+: temp [\d.]+ -> ", outputs[0], flags=re.M)) == 5, outputs[0]
    assert '"state":"failed"' in outputs[1].replace(" ", "") and "thermocouple open" in outputs[1]


def test_the_scaling_out_tutorial_names_real_options_and_settings() -> None:
    """Its commands need Postgres, Redis and workers, which other tests run; here: every option and
    setting it names exists."""
    from localbo.config import Settings

    text = (DOCS / "tutorials" / "scaling-out.md").read_text()
    known = {f"LOCALBO_{n.upper()}" for n in Settings.model_fields}
    assert set(re.findall(r"LOCALBO_[A-Z_]+", text)) <= known
    for verb, options in (("serve", ["--workers"]), ("worker", ["--queue", "--device"])):
        help_text = subprocess.run(
            [sys.executable, "-m", "localbo.cli", verb, "--help"], capture_output=True, text=True, timeout=60
        ).stdout
        for option in options:
            assert option in help_text and option in text, (verb, option)
