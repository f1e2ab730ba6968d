"""Policies: the science, pure torch/botorch. A new policy is one new module here.

Every module in this package is imported once by ``registry()``; a module adds its
policy with the ``@register`` decorator.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any, TypeVar

from localbo.policies import thread_settings  # noqa: F401  (GPyTorch's settings per thread, before any model)
from localbo.policies.base import (
    Box,
    Display,
    FiniteSpace,
    Policy,
    PolicyConfig,
    PolicyConfigError,
    PolicyError,
    PolicyState,
    Polytope,
    Progress,
    SpaceStructure,
    StateMigrationError,
    Suggestion,
    SuggestRequest,
)

__all__ = [
    "Box",
    "Display",
    "FiniteSpace",
    "Policy",
    "PolicyConfig",
    "PolicyConfigError",
    "PolicyError",
    "PolicyState",
    "Polytope",
    "Progress",
    "SpaceStructure",
    "StateMigrationError",
    "SuggestRequest",
    "Suggestion",
    "get_policy",
    "register",
    "registry",
]

_POLICIES: dict[str, type[Policy[Any, Any]]] = {}
PolicyT = TypeVar("PolicyT", bound=type[Policy[Any, Any]])  # register keeps the class's own type


def register(cls: PolicyT) -> PolicyT:
    if cls.name in _POLICIES and _POLICIES[cls.name] is not cls:
        raise ValueError(f"two policies named {cls.name!r}")
    _POLICIES[cls.name] = cls
    return cls


@cache
def _import_policy_modules() -> None:
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base" and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def registry() -> dict[str, type[Policy[Any, Any]]]:
    """Every known policy by name (the package's modules, and any registered elsewhere)."""
    _import_policy_modules()
    return dict(sorted(_POLICIES.items()))


def get_policy(name: str) -> type[Policy[Any, Any]]:
    policies = registry()
    if name not in policies:
        raise KeyError(name)
    return policies[name]
