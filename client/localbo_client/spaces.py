"""Helpers that build a finite search space (a list of candidates) for ``Client.create_study``.

```python
space = finite_space([{"x": 0.1, "n": 3}, {"x": 0.7, "n": 1}], ids=["a", "b"])
space = finite_space_from_csv("candidates.csv")         # a header row; an optional "id" column
study = client.create_study("screen", space=space, policy="chaining-ucb")
trial = study.ask()                                       # trial.candidate == "a", trial.params == {...}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any


def finite_space(
    candidates: Sequence[dict[str, float]],
    ids: Sequence[str] | None = None,
    kernel: Sequence[Sequence[float]] | str | None = None,
    allow_repeats: bool = False,
) -> dict[str, Any]:
    """A finite space: ``candidates`` as rows of parameter values, optional ``ids`` (one per candidate),
    an optional prior ``kernel`` (an N x N matrix over the candidates, or "cosine"), ``allow_repeats`` (whether a
    candidate may be asked more than once).

    ```python
    space = finite_space([{"x": 0.1, "n": 3}, {"x": 0.7, "n": 1}], ids=["a", "b"])
    study = client.create_study("screen", space=space, policy="chaining-ucb")
    study.ask().candidate                   # "a" or "b"
    ```
    """
    if ids is not None and len(ids) != len(candidates):
        raise ValueError(f"ids: expected {len(candidates)} ids, one per candidate, got {len(ids)}")
    rows: list[dict[str, Any]]
    if ids is None:
        rows = [{"params": dict(c)} for c in candidates]
    else:
        rows = [{"id": str(i), "params": dict(c)} for i, c in zip(ids, candidates, strict=True)]
    space: dict[str, Any] = {"kind": "finite", "candidates": rows, "allow_repeats": allow_repeats}
    if kernel is not None:
        space["kernel"] = kernel if isinstance(kernel, str) else [list(map(float, row)) for row in kernel]
    return space


def finite_space_from_csv(
    source: str | PathLike[str],
    kernel: Sequence[Sequence[float]] | str | None = None,
    allow_repeats: bool = False,
) -> dict[str, Any]:
    """A finite space from a CSV file (or CSV text with a newline): a header row, an optional "id" column;
    ``kernel`` and ``allow_repeats`` as in ``finite_space``.

    ```python
    space = finite_space_from_csv("candidates.csv")
    space = finite_space_from_csv("id,x,n\na,0.1,3\nb,0.7,1\n")
    ```
    """
    text = str(source) if "\n" in str(source) else Path(source).read_text()
    space: dict[str, Any] = {"kind": "finite", "csv": text, "allow_repeats": allow_repeats}
    if kernel is not None:
        space["kernel"] = kernel if isinstance(kernel, str) else [list(map(float, row)) for row in kernel]
    return space


def canonical_space(space: dict[str, Any]) -> dict[str, Any]:
    """A box space as compared across processes and with the server's copy: defaults dropped (``log: false``),
    bounds as floats. A finite space (its summary on the server) is compared by kind only.

    ```python
    canonical_space({"x": {"type": "float", "low": 0, "high": 1, "log": False}})
    # {"x": {"type": "float", "low": 0.0, "high": 1.0}}
    ```
    """
    if space.get("kind") == "finite":
        return {"kind": "finite"}
    out = {}
    for name, spec in space.items():
        spec = {k: v for k, v in dict(spec).items() if not (k == "log" and v is False)}
        for k in ("low", "high"):
            if k in spec:
                spec[k] = float(spec[k])
        out[name] = spec
    return out
