"""The OpenAPI document and ``/docs``: real schemas for the free-form fields, the bearer scheme, and
Swagger UI served from files shipped in a wheel (``fastapi-offline``), so it works without a network.

The free-form fields (``space``, ``params``, ``policy_config``, ``metadata``) stay plain dicts in
``schemas.py``: the engine validates them and its 422s name the exact key. The models here only
describe what is taken and returned; ``schemas.documented`` points each field at its component.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from localbo.api.trial_schemas import TRIAL_TOKEN, MetricValues
from localbo.export import CSV_COLUMNS
from localbo.finite_space import MAX_CANDIDATES
from localbo.policies import registry
from localbo.space import MAX_CHOICES

DOCS_URL = "/docs"
DOCS_STATIC = "/docs/static"
SWAGGER_FILES = Path(fastapi_offline.__file__).resolve().parent / "static"
PUBLIC_PATHS = frozenset({DOCS_URL, "/openapi.json"})
PUBLIC_PREFIX = DOCS_STATIC + "/"
REF = "#/components/schemas/{model}"

Name = Annotated[str, Field(min_length=1, max_length=200)]
Number = int | float
Choice = str | int | float | bool


class Described(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FloatParam(Described):
    type: Literal["float"]
    low: float
    high: float = Field(description=">= low; high - low must be a finite number")
    log: bool = Field(default=False, description="Log scale (low > 0)")


class IntParam(Described):
    type: Literal["int"]
    low: int = Field(ge=-(2**53), le=2**53)
    high: int = Field(ge=-(2**53), le=2**53, description=">= low")
    log: Literal[False] = False


class CategoricalParam(Described):
    type: Literal["categorical"]
    choices: list[Choice] = Field(
        min_length=1, max_length=MAX_CHOICES, json_schema_extra={"uniqueItems": True}, description="Distinct"
    )


Param = Annotated[FloatParam | IntParam | CategoricalParam, Field(discriminator="type")]


class Candidate(Described):
    id: Annotated[str, Field(min_length=1, max_length=200)] | int | None = Field(
        default=None, description="Unique; its position when left out"
    )
    params: dict[Name, Number] = Field(min_length=1, description="The same parameters on every candidate")


Kernel = Literal["cosine"] | list[list[float]] | None


class FiniteCandidates(Described):
    kind: Literal["finite"]
    candidates: list[Candidate] = Field(min_length=1, max_length=MAX_CANDIDATES)
    kernel: Kernel = Field(default=None, description="N x N prior covariance (symmetric, PSD) or 'cosine'")
    allow_repeats: bool = False


class FiniteCsv(Described):
    kind: Literal["finite"]
    csv: str = Field(min_length=1, description="A header row (an optional 'id' column, then parameters)")
    kernel: Kernel = Field(default=None, description="N x N prior covariance (symmetric, PSD) or 'cosine'")
    allow_repeats: bool = False


class FiniteFloat(Described):
    type: Literal["float"]
    low: float = Field(description="The smallest value among the candidates")
    high: float = Field(description="The largest value among the candidates")


class FiniteSummary(Described):
    """A finite space as a study shows it: the candidates live in their own table."""

    kind: Literal["finite"]
    params: dict[Name, FiniteFloat]
    candidates: int = Field(description="How many")
    kernel: Literal["matrix", "cosine"] | None
    allow_repeats: bool


class TellComplete(Described):
    value: float | None = Field(default=None, description="The objective value (a study that names no metrics)")
    values: MetricValues | None = None
    state: Literal["complete"] = "complete"
    reason: str | None = Field(default=None, max_length=10_000)
    token: str | None = TRIAL_TOKEN


class TellFailed(Described):
    state: Literal["failed"]
    value: float | None = Field(default=None, description="Accepted and ignored")
    reason: str | None = Field(default=None, max_length=10_000, description="Why the trial failed")
    token: str | None = TRIAL_TOKEN


def operation_id(route: APIRoute) -> str:
    """An operation's id is its route's name (create_study, ask, tell): generated clients name their
    functions after it."""
    return route.name


def _defaults_described(config: dict[str, Any]) -> None:
    """A config key's default goes in its description, not ``default``: a generated client sends every key
    with a default, and each kind of space refuses the other's keys (a finite space refuses ``candidates``)."""
    for key in config.get("properties", {}).values():
        default = key.pop("default", None)
        if default is not None:
            key["description"] = f"{key.get('description', '')} (default: {json.dumps(default)})".lstrip()


def _components() -> dict[str, Any]:
    """The described models as OpenAPI components, and the unions that name them."""
    configs = list({cls.Config.__name__: cls.Config for cls in registry().values()}.values())
    models: list[type[BaseModel]] = [FloatParam, IntParam, CategoricalParam, FiniteCandidates, FiniteCsv, FiniteSummary]
    models += [*configs, TellComplete, TellFailed]
    _, schema = models_json_schema([(m, "validation") for m in models], ref_template=REF)
    components: dict[str, Any] = schema.get("$defs", {})
    for config in configs:
        _defaults_described(components[config.__name__])
    ref = REF.format
    space = {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"minLength": 1, "maxLength": 200},
        "additionalProperties": {
            "oneOf": [{"$ref": ref(model=m)} for m in ("FloatParam", "IntParam", "CategoricalParam")],
            "discriminator": {
                "propertyName": "type",
                "mapping": {"float": ref(model="FloatParam"), "int": ref(model="IntParam")}
                | {"categorical": ref(model="CategoricalParam")},
            },
        },
        "description": "Parameter name -> its kind: float, int or categorical",
    }
    components["Space"] = space
    components["SpaceIn"] = {
        "anyOf": [{"$ref": ref(model="Space")}, {"$ref": ref(model="FiniteCandidates")}]
        + [{"$ref": ref(model="FiniteCsv")}],
        "description": "Parameters by name, or a finite space (kind: finite) of candidates or CSV",
    }
    components["SpaceOut"] = {"anyOf": [{"$ref": ref(model="Space")}, {"$ref": ref(model="FiniteSummary")}]}
    components["PolicyConfig"] = {
        "anyOf": [{"$ref": ref(model=c.__name__)} for c in configs],
        "description": "The chosen policy's Config: "
        + ", ".join(f"{n}: {c.Config.__name__}" for n, c in registry().items()),
    }
    # A study's config as returned: a plain object, since which Config it is depends on the policy beside
    # it (a client given the union above would read every config as its first member and drop keys).
    components["PolicyConfigOut"] = {
        "type": "object",
        "additionalProperties": True,
        "description": "The policy's Config (see PolicyConfig), defaults filled in",
    }
    components["Params"] = {
        "type": "object",
        "additionalProperties": {"type": ["string", "number", "boolean"]},
    }
    components["Metadata"] = {"type": "object", "additionalProperties": True}
    return components


STUDY = "/api/v1/studies/{study}"
TRIAL = STUDY + "/trials/{number}"


def _links(paths: dict[str, Any]) -> None:
    """Links from what creates a study or a trial to what reads or writes it (tools follow them)."""

    def link_to(targets: list[str], parameters: dict[str, str]) -> dict[str, Any]:
        links = {}
        for path in targets:
            for method, operation in paths.get(path, {}).items():
                names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
                if names and names <= set(parameters):
                    links[f"{method}{path}".replace("/", "_").replace("{", "").replace("}", "")] = {
                        "operationId": operation["operationId"],
                        "parameters": {name: parameters[name] for name in names},
                    }
        return links

    study_paths = [p for p in paths if p.startswith(STUDY) and "{number}" not in p]
    created = paths["/api/v1/studies"]["post"]["responses"]["201"]
    created["links"] = link_to(study_paths, {"study": "$response.body#/name"})
    asked = paths[STUDY + "/ask"]["post"]["responses"]["200"]
    trial = {"study": "$request.path.study", "number": "$response.body#/trials/0/number"}
    asked["links"] = link_to([TRIAL + "/tell", TRIAL + "/heartbeat"], trial)


def install(app: FastAPI, secured: bool, max_ask_count: int) -> None:
    """The document (with the bearer scheme when tokens are configured) and the offline ``/docs``."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            components = spec.setdefault("components", {})
            schemas = components.setdefault("schemas", {})
            schemas.update(_components())
            for unused in ("HTTPValidationError", "ValidationError"):
                schemas.pop(unused, None)
            schemas["AskRequest"]["properties"]["count"]["maximum"] = max_ask_count  # LOCALBO_MAX_ASK_COUNT
            _links(spec["paths"])
            exported = spec["paths"][STUDY + "/export"]["get"]  # the CSV's columns, in the REST reference too
            exported["description"] = "\n\n".join(filter(None, [exported.get("description"), CSV_COLUMNS]))
            if secured:
                components["securitySchemes"] = {
                    "bearer": {"type": "http", "scheme": "bearer", "description": "LOCALBO_TOKENS"}
                }
                for path, operations in spec["paths"].items():
                    for operation in operations.values():
                        operation["security"] = [] if path == "/healthz" else [{"bearer": []}]
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.mount(DOCS_STATIC, StaticFiles(directory=SWAGGER_FILES), name="docs-static")

    @app.get(DOCS_URL, include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - API",
            swagger_js_url=f"{DOCS_STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_STATIC}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True},
        )
