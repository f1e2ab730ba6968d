"""MkDocs hooks: the pages that must never drift from the code are generated at build time.

- ``<!-- generated: rest -->``: the REST reference, from the app's OpenAPI document;
- ``<!-- generated: configuration -->``: the settings table, from ``localbo.config.Settings``;
- ``<!-- generated: capabilities -->``: what each policy serves besides one objective (``Policy.handles``);
- ``<!-- results: FILE#HEADING -->``: a section (its table) of a benchmark results file, as the
  benchmark script wrote it (``benchmarks/results/FILE``), with its figures (the script's PNGs,
  added to the site under ``results/`` by ``on_files``).
"""

from __future__ import annotations

import json
import posixpath
import re
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

# The REST reference imports the app, and with it gpytorch's linear_operator, whose functions are decorated
# with ``torch.jit.script``, deprecated in the torch we pin (2.13). ``mkdocs build`` prints every
# DeprecationWarning with a source excerpt; this one is a dependency's and says nothing about the docs.
warnings.filterwarnings("ignore", message=r"`torch\.jit\.script` is deprecated", category=DeprecationWarning)


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
    if "<!-- generated: capabilities -->" in markdown:
        markdown = markdown.replace("<!-- generated: capabilities -->", capabilities_table())
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
    spread = f" {spread_meaning(name, text)}" if "±" in body else ""
    source = f"From `benchmarks/results/{name}`, section “{heading}”, as its script wrote it.{spread}"
    return f"{body.strip()}\n\n*{source}*\n"


# What a results file's "mean ± X" says X is (its script states it in the file's opening paragraph)
SPREADS = {
    "std": "± is the standard deviation over seeds (how far single runs stray)",
    "standard deviation": "± is the standard deviation over seeds (how far single runs stray)",
    "standard error": "± is the standard error of the mean over seeds (the standard deviation / √seeds)",
}


def spread_meaning(name: str, text: str) -> str:
    """What ± means in a section of results file ``name``, from the file's own words ("Mean ± std over seeds",
    "Mean ± standard error over seeds"): a section whose file does not say fails the build."""
    found = re.search(r"\bmean ± (standard deviation|standard error|std)\b", text, flags=re.I)
    if found is None:
        raise ValueError(f"benchmarks/results/{name} shows ± without saying whether it is a deviation or an error")
    return SPREADS[found.group(1).lower()] + "."


CAPABILITY_HEADINGS = {  # Policy.handles' names, as a user reads them
    "constraints": "outcome constraints",
    "parameter_constraints": "parameter constraints",
    "failures": "failures: avoid",
    "safety": "safe mode",
    "objectives": "several objectives",
}


def capabilities_table() -> str:
    """Every policy and what it serves (``Policy.handles``, the same sets creation checks a study against)."""
    from localbo.policies import registry
    from localbo.policies.base import CAPABILITIES

    heads = [CAPABILITY_HEADINGS[c] for c in CAPABILITIES]
    rows = ["| policy | " + " | ".join(heads) + " |", "| --- |" + " --- |" * len(heads)]
    for name, cls in sorted(registry().items()):
        rows.append(f"| `{name}` | " + " | ".join("yes" if c in cls.handles else "-" for c in CAPABILITIES) + " |")
    return "\n".join(rows) + "\n"


def configuration_table() -> str:
    """Every setting of ``localbo.config.Settings``: its variables, its default as one would write it in the
    environment, what it takes, and its description (a setting without one fails the build)."""
    from localbo.config import Settings

    rows = ["| variable | default | takes | meaning |", "| --- | --- | --- | --- |"]
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        names = list(getattr(alias, "choices", [])) or [f"LOCALBO_{name.upper()}"]
        if not field.description:
            raise ValueError(f"localbo.config.Settings.{name} has no description for the configuration page")
        variables = ", ".join(f"`{n}`" for n in names)
        takes = _cell(_setting_type(field.annotation, field.metadata))
        rows.append(f"| {variables} | {_env_value(field.default)} | {takes} | {_cell(field.description)} |")
    return "\n".join(rows) + "\n"


def _env_value(value: Any) -> str:
    """A default as the environment spells it: ``true``, ``3600`` (not ``True``, ``3600.0``), "(empty)"."""
    if value == "":
        return "(empty)"
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    else:
        text = str(value)
    return f"`{text}`"


def _setting_type(annotation: Any, metadata: list[Any]) -> str:
    """What a setting takes, in words: ``text``, ``json`` for a choice; a number with its bounds."""
    import typing

    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(f"`{choice}`" for choice in typing.get_args(annotation))
    kinds = {bool: "`true` or `false`", int: "an integer", float: "a number", str: "text"}
    kind = kinds.get(annotation, str(annotation))
    bounds = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    limits = [f"{op} {getattr(m, key)}" for m in metadata for key, op in bounds.items() if hasattr(m, key)]
    return f"{kind} ({', '.join(limits)})" if limits else kind


# Example values of path and query parameters in the REST reference's example requests
PARAMETER_EXAMPLES: dict[str, Any] = {"study": "furnace", "number": 1, "x": "temp", "y": "pressure"}
# The meaning of a field whose schema gives none, by name (after the same name's description elsewhere in
# the document)
FIELD_MEANINGS = {
    "low": "The lower bound, in user units",
    "high": "The upper bound, in user units",
    "log": "Log scale (low > 0)",
    "choices": "The values the parameter takes",
    "op": "How the measured value compares with the bound",
    "bound": "The limit, in the metric's (or the terms') units",
    "params": "Parameter name -> value in user units",
    "allow_repeats": "Whether a candidate may be asked more than once",
}
# Example answers of the routes whose body is not JSON (the document gives their media type only)
MEDIA_EXAMPLES = {
    "text/csv": "number,state,value,temp,source,reason,created_at,completed_at\n"
    "1,complete,0.82,600.0,minucb,,2026-11-24T10:00:00+00:00,2026-11-24T10:05:00+00:00\n",
    "text/event-stream": 'event: trials\ndata: {"number": [13], "state": ["complete"], "value": [0.84]}\n\n',
    "text/plain": '# TYPE localbo_asked_trials_total counter\nlocalbo_asked_trials_total{source="plan"} 12.0\n',
}


def rest_reference() -> str:
    """Every route: its parameters, its body's fields and its answer's fields (type, default, meaning), its
    statuses, and one example request and answer; then every schema the routes name, field by field. All
    from the OpenAPI document, its examples those of ``api/schemas.py`` and ``api/trial_schemas.py``."""
    from localbo.api import create_app
    from localbo.config import Settings

    spec = create_app(Settings(database_url="sqlite://")).openapi()
    components: dict[str, Any] = spec["components"]["schemas"]
    meanings = dict(FIELD_MEANINGS)
    for component in components.values():
        for field, sub in component.get("properties", {}).items():
            if _description(sub):
                meanings.setdefault(field, _description(sub))
    components["__meanings__"] = meanings
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
                out.append("| parameter | in | type | default | meaning |\n| --- | --- | --- | --- | --- |")
                for p in params:
                    schema = p.get("schema", {})
                    default = "required" if p.get("required") else _default(schema)
                    meaning = _cell(p.get("description") or schema.get("description", ""), _limits(schema))
                    out.append(f"| `{p['name']}` | {p['in']} | {_type(schema)} | {default} | {meaning} |")
                out.append("")
            body = op.get("requestBody", {}).get("content", {})
            request_example = None
            for media, content in body.items():
                schema = content.get("schema", {})
                out.append(f"**Request body** ({media}): {_type(schema)}\n")
                out.append(_fields(schema, components))
                request_example = _shaped(_example(schema, components, request=True), schema, components, False)
            out.append("**Answers**\n")
            out.append("| status | meaning | body |\n| --- | --- | --- |")
            success: tuple[str, str, dict[str, Any]] | None = None
            for status, response in op.get("responses", {}).items():
                contents = response.get("content", {})
                kinds = ", ".join(f"{media} {_type(c.get('schema', {}))}" for media, c in contents.items())
                description = _cell(response.get("description", ""))
                out.append(f"| {status} | {description} | {kinds} |")
                if success is None and status.startswith("2"):
                    media, content = next(iter(contents.items()), ("", {}))
                    success = (status, media, content.get("schema", {}))
            out.append("")
            if success is not None and success[1] == "application/json":
                fields = _fields(success[2], components)
                if fields:
                    out.append(f"**Answer body** ({success[0]}): {_type(success[2])}\n")
                    out.append(fields)
            out.append("**Example**\n")
            out.append("```")
            out.append(_example_request(method, path, params, request_example))
            out.append("```\n")
            if success is not None:
                status, media, schema = success
                out.append(f"answers {status}" + (f" ({media}):" if media else " (no body)") + "\n")
                if media == "application/json":
                    example = _shaped(_example(schema, components), schema, components, True)
                    answer = json.dumps(example, indent=2, ensure_ascii=False)
                    out.append(f"```json\n{answer}\n```\n")
                elif media:
                    out.append(f"```\n{MEDIA_EXAMPLES.get(media, '').rstrip()}\n```\n")
    out.append("## Schemas\n")
    out.append(
        "The shapes the routes above name, field by field (a field marked required has no default; "
        "`null` is a value where the type says so).\n"
    )
    for name in sorted(set(components) - {"__meanings__"}, key=str.lower):
        schema = components[name]
        out.append(f"### {name}\n")
        if schema.get("description"):
            out.append(_cell(schema["description"]) + "\n")
        fields = _fields(schema, components, expand=False)
        if fields:
            out.append(fields)
        elif "properties" not in schema:
            out.append(f"Type: {_type(schema, top=True)}\n")
    return "\n".join(out)


def _resolve(schema: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """A ``$ref`` (or a lone ``allOf`` around one) followed to its component."""
    while True:
        if "$ref" in schema:
            schema = components[schema["$ref"].rsplit("/", 1)[-1]]
        elif len(schema.get("allOf", [])) == 1 and "properties" not in schema:
            schema = schema["allOf"][0]
        else:
            return schema


def _fields(schema: dict[str, Any], components: dict[str, Any], expand: bool = True) -> str:
    """A table of an object's fields: name, type, default (or required), meaning. A body that is one of
    several shapes gets a table per shape."""
    target = _resolve(schema, components) if expand else schema
    if "properties" not in target:
        shapes = target.get("anyOf") or target.get("oneOf") or []
        if expand and shapes and all("$ref" in s for s in shapes):
            return "\n".join(
                f"{_type(shape)}:\n\n{_fields(shape, components)}" for shape in shapes if _fields(shape, components)
            )
        return ""
    required = set(target.get("required", []))
    rows = ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
    for field, sub in target["properties"].items():
        default = "required" if field in required else _default(sub)
        meaning = _description(sub) or components["__meanings__"].get(field) or ""
        if not meaning and "const" in sub:
            meaning = f"Always `{json.dumps(sub['const'])}`: names this shape"
        rows.append(f"| `{field}` | {_type(sub)} | {default} | {_cell(meaning, _limits(sub))} |")
    return "\n".join(rows) + "\n"


def _description(schema: dict[str, Any]) -> str:
    if schema.get("description"):
        return schema["description"]
    for branch in schema.get("anyOf", []) + schema.get("allOf", []):
        if branch.get("description"):
            return branch["description"]
    return ""


def _limits(schema: dict[str, Any]) -> str:
    """The bounds JSON Schema states (on the field, or on its non-null branch), in words."""
    words = {
        "minimum": ">= {}", "exclusiveMinimum": "> {}", "maximum": "<= {}", "exclusiveMaximum": "< {}",
        "minLength": "at least {} characters", "maxLength": "at most {} characters",
        "minItems": "at least {} items", "maxItems": "at most {} items", "maxProperties": "at most {} keys",
        "pattern": "matches `{}`",
    }  # fmt: skip
    found = []
    for candidate in [schema, *schema.get("anyOf", [])]:
        for key, text in words.items():
            if key in candidate:
                found.append(text.format(candidate[key]))
    return "; ".join(found)


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return "`null`" if _nullable(schema) else "—"
    return f"`{json.dumps(schema['default'], ensure_ascii=False)}`"


def _nullable(schema: dict[str, Any]) -> bool:
    return any(branch.get("type") == "null" for branch in schema.get("anyOf", []))


def _cell(text: str, limits: str = "") -> str:
    """Text for a table cell: one line, ``|`` escaped, ``*`` and ``<`` literal outside code spans."""
    text = " ".join(text.split())
    if limits:
        text = f"{text} ({limits})" if text else limits.capitalize()
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # outside backticks
        parts[i] = parts[i].replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("<", "&lt;")
    return "`".join(parts).replace("|", "\\|")


def _example(schema: dict[str, Any], components: dict[str, Any], request: bool = False) -> Any:
    """The schema's own example (``examples`` in ``api/schemas.py``, ``api/trial_schemas.py``), else one built from
    its parts: a request shows its required fields, an answer every field."""
    if schema.get("examples"):
        return schema["examples"][0]
    if "$ref" in schema:
        return _example(components[schema["$ref"].rsplit("/", 1)[-1]], components, request)
    for key in ("allOf", "anyOf", "oneOf"):
        branches = [b for b in schema.get(key, []) if b.get("type") != "null"]
        if branches:
            return _example(branches[0], components, request)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema.get("default", schema["enum"][0])
    if "default" in schema and schema["default"] is not None:
        return schema["default"]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        if "properties" in schema:
            required = set(schema.get("required", []))
            return {
                name: _example(sub, components, request)
                for name, sub in schema["properties"].items()
                if not request or name in required
            }
        extra = schema.get("additionalProperties")
        return {"name": _example(extra, components, request)} if isinstance(extra, dict) else {}
    if kind == "array":
        return [_example(schema.get("items", {}), components, request)]
    if kind == "string":
        return "2026-11-24T10:00:00Z" if schema.get("format") == "date-time" else "string"
    return {"integer": 1, "number": 0.5, "boolean": True, "null": None}.get(kind)


def _shaped(value: Any, schema: dict[str, Any], components: dict[str, Any], answer: bool) -> Any:
    """An example in the order of the schema's fields (the document sorts an example's keys), an answer's
    null fields put back (the document drops them)."""
    schema = _resolve(schema, components)
    branches = [b for b in schema.get("anyOf", []) + schema.get("oneOf", []) if b.get("type") != "null"]
    if branches and "properties" not in schema:
        schema = _resolve(branches[0], components)
    if isinstance(value, list) and "items" in schema:
        return [_shaped(item, schema["items"], components, answer) for item in value]
    if not isinstance(value, dict) or "properties" not in schema:
        return value
    shaped = {}
    for field, sub in schema["properties"].items():
        if field in value:
            shaped[field] = _shaped(value[field], sub, components, answer)
        elif answer and (_nullable(sub) or sub.get("default", 0) is None):
            shaped[field] = None
    shaped.update({k: v for k, v in value.items() if k not in shaped})
    return shaped


def _example_request(method: str, path: str, params: list[dict[str, Any]], body: Any) -> str:
    """The request line (path parameters filled in, required query parameters added), its headers and body."""
    url = path
    query = []
    for p in params:
        value = PARAMETER_EXAMPLES.get(p["name"], _example(p.get("schema", {}), {}))
        if p["in"] == "path":
            url = url.replace("{" + p["name"] + "}", str(value))
        elif p["in"] == "query" and p.get("required"):
            query.append(f"{p['name']}={value}")
    lines = [f"{method.upper()} {url}" + (f"?{'&'.join(query)}" if query else "")]
    if body is not None:
        lines += ["content-type: application/json", "", json.dumps(body, ensure_ascii=False)]
    return "\n".join(lines)


def _type(schema: dict[str, Any], top: bool = False) -> str:
    """A schema's type in words; a component as a link to its section under Schemas."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[`{name}`](#{name.lower()})"
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return " or ".join(_type(s) for s in schema[key])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        return " or ".join(f"`{k}`" for k in kind)
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    if kind == "object" and "patternProperties" in schema:
        return f"object of {' or '.join(_type(s) for s in schema['patternProperties'].values())}"
    if kind == "string" and schema.get("format"):
        return f"`string` ({schema['format']})"
    return f"`{kind}`"
