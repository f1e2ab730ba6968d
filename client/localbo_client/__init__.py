"""localbo_client: the thin Python client of the localbo service (needs only httpx).

from localbo_client import Client
client = Client("http://127.0.0.1:8000")
study = client.create_study("beam", space={"x": {"type": "float", "low": 0, "high": 1}})
with study.ask() as trial:
    study.tell(trial, measure(trial.params))

A study that names metrics and limits (``Objective``, ``OutcomeConstraint``, ``ParameterConstraint``) is told
named values: ``study.tell(trial, {"yield": 0.81, "purity": 0.97})``.
"""

from localbo_client.client import Client, Study, Trial
from localbo_client.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    LocalboError,
    NotFound,
    ServerError,
    TooLarge,
    Unauthorized,
)
from localbo_client.outcomes import Failures, Objective, OutcomeConstraint, ParameterConstraint, Result, Safety
from localbo_client.spaces import finite_space, finite_space_from_csv

__all__ = [
    "BadRequest",
    "Client",
    "Conflict",
    "Failures",
    "Forbidden",
    "LocalboError",
    "NotFound",
    "Objective",
    "OutcomeConstraint",
    "ParameterConstraint",
    "Result",
    "Safety",
    "ServerError",
    "Study",
    "TooLarge",
    "Trial",
    "Unauthorized",
    "finite_space",
    "finite_space_from_csv",
]
__version__ = "0.1.0"
