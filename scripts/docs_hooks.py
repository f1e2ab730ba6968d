"""MkDocs hooks: the pages that must never drift from the code are generated at build time.

- ``<!-- generated: rest -->``: the REST reference, from the app's OpenAPI document;
- ``<!-- generated: configuration -->``: the settings table, from ``localbo.config.Settings``;
- ``<!-- results: FILE#HEADING -->``: a section (its table) of a benchmark results file, as the
  benchmark script wrote it (``benchmarks/results/FILE``), with its figures (the script's PNGs,
  added to the site under ``results/`` by ``on_files``).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def on_files(files: Any, config: Any) -> Any:
    """The benchmarks' figures, served from ``results/`` (the PNGs their scripts wrote, never copies)."""
    from mkdocs.structure.files import File

    for figure in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"results/{figure.name}", abs_src_path=str(figure)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if "<!-- generated: rest -->" in markdown:
        markdown = markdown.replace("<!-- generated: rest -->", rest_reference())
    if "<!-- generated: configuration -->" in markdown:
        markdown = markdown.replace("<!-- generated: configuration -->", configuration_table())
    return re.sub(
        r"<!-- results: ([\w.-]+)#(.+?) -->",
        lambda m: results_section(m.group(1), m.group(2), page.file.src_uri),
        markdown,
    )


def results_section(name: str, heading: str, page_uri: str = "index.md") -> str:
    """The section under ``## heading`` of a results file, up to the next heading, its figures'
    links pointed at ``results/`` relative to the page that includes it."""
    text = (RESULTS / name).read_text()
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    if match is None:
        raise ValueError(f"benchmarks/results/{name} has no section '## {heading}'")
    to_results = posixpath.relpath("results", posixpath.dirname(page_uri) or ".")
    body = re.sub(r"^!\[(.*?)\]\(([\w.-]+\.png)\)", rf"![\1]({to_results}/\2)", match.group(1), flags=re.M)
    return f"{body.strip()}\n\n*From `benchmarks/results/{name}`, section “{heading}”, as its script wrote it.*\n"


def configuration_table() -> str:
    from localbo.config import Settings

    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names = list(getattr(alias, "choices", [])) or [f"LOCALBO_{name.upper()}"]
        default = field.default
        shown = "(empty)" if default == "" else f"`{default}`"
        rows.append(f"| {', '.join(f'`{n}`' for n in names)} | {shown} | {field.description or ''} |")
    return "\n".join(rows) + "\n"


def rest_reference() -> str:
    from localbo.api import create_app
    from localbo.config import Settings

    spec = create_app(Settings(database_url="sqlite://")).openapi()
    out: list[str] = []
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            out.append(f"## `{method.upper()} {path}`\n")
            if op.get("summary"):
                out.append(f"**{op['summary']}**\n")
            if op.get("description"):
                out.append(op["description"].strip() + "\n")
            params = op.get("parameters", [])
            if params:
                out.append("| parameter | in | required | schema |\n| --- | --- | --- | --- |")
                for p in params:
                    required = "yes" if p.get("required") else "no"
                    out.append(f"| `{p['name']}` | {p['in']} | {required} | {_schema(p.get('schema', {}))} |")
                out.append("")
            body = op.get("requestBody", {}).get("content", {})
            for media, content in body.items():
                out.append(f"Body ({media}): {_schema(content.get('schema', {}))}\n")
            out.append("| status | meaning | body |\n| --- | --- | --- |")
            for status, response in op.get("responses", {}).items():
                kinds = ", ".join(
                    f"{media} {_schema(c.get('schema', {}))}" for media, c in response.get("content", {}).items()
                )
                description = response.get("description", "").replace("\n", " ").replace("|", "\\|")
                out.append(f"| {status} | {description} | {kinds} |")
            out.append("")
    return "\n".join(out)


def _schema(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        return f"`{schema['$ref'].rsplit('/', 1)[-1]}`"
    if "anyOf" in schema:
        return " or ".join(_schema(s) for s in schema["anyOf"])
    if "oneOf" in schema:
        return " or ".join(_schema(s) for s in schema["oneOf"])
    kind = schema.get("type", "object")
    if kind == "array":
        return f"array of {_schema(schema.get('items', {}))}"
    return f"`{kind}`"
