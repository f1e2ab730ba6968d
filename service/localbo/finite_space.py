"""Finite search spaces: a study's space as a list of candidates, checked once at creation.

    {"kind": "finite",
     "candidates": [{"id": "g1", "params": {"x": 1.0, "n": 3}}, ...]    # or "csv": "id,x,n\\ng1,1.0,3\\n..."
     "kernel": [[1.0, 0.2, ...], ...] | "cosine" | null,                  # optional
     "allow_repeats": false}

Every candidate has the same numeric parameters; ``id`` is optional (default: its position, "0", "1", ...)
and unique. The policy sees each candidate scaled to [0, 1] per parameter (min..max over the candidates).
``kernel``: a prior covariance over the candidates (N x N, symmetric, positive semi-definite; for a kernel on
objects the service cannot compute, such as graphs), or "cosine": the normalised dot product of the
parameter vectors (the shortest-path kernel of graphs when the parameters are path-length histograms).
What is stored on the study row is the summary (``summary``); the candidates go to their own table.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from localbo.domain.outcomes import ParameterConstraint

from localbo.errors import InvalidInput
from localbo.space import SpaceError, check_names, number

MAX_CANDIDATES = 100_000
MAX_KERNEL_CANDIDATES = 5_000  # an N x N matrix in JSON: 25M numbers at most
PSD_TOLERANCE = 1e-6  # smallest eigenvalue allowed, relative to the largest


def is_finite_spec(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("kind") == "finite"


@dataclass(frozen=True)
class FiniteSpec:
    names: list[str]
    ids: list[str]
    values: torch.Tensor  # N x d, float64, user units
    kernel: torch.Tensor | None  # N x N
    kernel_kind: str | None  # "matrix", "cosine" or None
    allow_repeats: bool

    @property
    def size(self) -> int:
        return len(self.ids)

    @property
    def dim(self) -> int:
        return len(self.names)

    def unit(self) -> torch.Tensor:
        """N x d: each parameter scaled to [0, 1] over the candidates (0.5 where it is constant)."""
        import torch

        low, high = self.values.min(0).values, self.values.max(0).values
        width = high - low
        return torch.where(width > 0, (self.values - low) / width.clamp_min(1e-300), torch.full_like(self.values, 0.5))

    def summary(self) -> dict[str, Any]:
        low, high = self.values.min(0).values.tolist(), self.values.max(0).values.tolist()
        return {
            "kind": "finite",
            "params": {
                n: {"type": "float", "low": lo, "high": hi} for n, lo, hi in zip(self.names, low, high, strict=True)
            },
            "candidates": self.size,
            "kernel": self.kernel_kind,
            "allow_repeats": self.allow_repeats,
        }

    def within(self, rules: list[ParameterConstraint]) -> FiniteSpec:
        """The candidates that satisfy every rule (linear, in user units, within FEASIBILITY_TOLERANCE), the
        kernel cut to them; a 422 naming ``parameter_constraints`` when none does."""
        import torch

        from localbo.domain.outcomes import FEASIBILITY_TOLERANCE

        keep = torch.ones(self.size, dtype=torch.bool)
        for rule in rules:
            lhs = sum(a * self.values[:, self.names.index(n)] for n, a in rule.terms.items())
            assert isinstance(lhs, torch.Tensor)
            if rule.op == "==":
                keep &= (lhs - rule.bound).abs() <= FEASIBILITY_TOLERANCE
            else:
                keep &= (lhs - rule.bound if rule.op == "<=" else rule.bound - lhs) <= FEASIBILITY_TOLERANCE
        if not bool(keep.any()):
            raise InvalidInput("parameter_constraints", f"none of the {self.size} candidates satisfies them")
        at = keep.nonzero()[:, 0]
        kernel = None if self.kernel is None else self.kernel[at][:, at]
        ids = [self.ids[i] for i in at.tolist()]
        return FiniteSpec(self.names, ids, self.values[at], kernel, self.kernel_kind, self.allow_repeats)

    def rows(self) -> list[dict[str, Any]]:
        """The candidates table's rows (without study_id)."""
        unit = self.unit().tolist()
        values = self.values.tolist()
        return [
            {"idx": i, "cid": cid, "params": _params(self.names, v), "x": u}
            for i, (cid, v, u) in enumerate(zip(self.ids, values, unit, strict=True))
        ]


def _params(names: list[str], values: list[float]) -> dict[str, float | int]:
    """Whole numbers come back as ints, as they were given (a CSV or JSON 3 stays 3)."""
    return {n: int(v) if float(v).is_integer() and abs(v) < 2**53 else v for n, v in zip(names, values, strict=True)}


def _rows_from_csv(text: Any) -> list[dict[str, Any]]:
    if not isinstance(text, str) or not text.strip():
        raise SpaceError("space.csv", "expected CSV text with a header row (an optional 'id' column, then parameters)")
    try:
        return _read_csv(text)
    except csv.Error as exc:  # a lone carriage return, an unclosed quote at the end, a huge field...
        raise SpaceError("space.csv", f"malformed CSV ({exc})") from None


def _read_csv(text: str) -> list[dict[str, Any]]:
    reader = csv.reader(io.StringIO(text.strip()))
    header = [h.strip() for h in next(reader)]
    if len(set(header)) != len(header) or not all(header):
        raise SpaceError("space.csv", f"expected distinct, non-empty column names, got {header}")
    names = [h for h in header if h != "id"]
    if not names:
        raise SpaceError("space.csv", "expected at least one parameter column besides 'id'")
    rows = []
    for line, cells in enumerate(reader, start=2):
        if not cells:
            continue
        if len(cells) != len(header):
            raise SpaceError(f"space.csv line {line}", f"expected {len(header)} cells ({header}), got {len(cells)}")
        row: dict[str, Any] = {"params": {}}
        for name, cell in zip(header, cells, strict=True):
            if name == "id":
                row["id"] = cell.strip()
                continue
            try:
                row["params"][name] = float(cell)
            except ValueError:
                raise SpaceError(f"space.csv line {line}.{name}", f"expected a number, got {cell!r}") from None
        rows.append(row)
        if len(rows) > MAX_CANDIDATES:
            break
    return rows


def _kernel(raw: Any, size: int) -> torch.Tensor:
    import torch

    if size > MAX_KERNEL_CANDIDATES:
        raise SpaceError(
            "space.kernel", f"a kernel matrix supports at most {MAX_KERNEL_CANDIDATES} candidates, got {size}"
        )
    if not isinstance(raw, list) or len(raw) != size:
        got = len(raw) if isinstance(raw, list) else type(raw).__name__
        raise SpaceError("space.kernel", f"expected an N x N matrix, N = {size} candidates; got {got} rows")
    for i, row in enumerate(raw):
        if not isinstance(row, list) or len(row) != size:
            got = len(row) if isinstance(row, list) else type(row).__name__
            raise SpaceError(f"space.kernel[{i}]", f"expected {size} numbers, got {got}")
    try:
        K = torch.tensor(raw, dtype=torch.float64)
    except (TypeError, ValueError):
        raise SpaceError("space.kernel", "expected numbers only") from None
    if not torch.isfinite(K).all():
        raise SpaceError("space.kernel", "expected finite numbers")
    asym = (K - K.T).abs()
    if float(asym.max()) > 1e-8 * max(1.0, float(K.abs().max())):
        i, j = divmod(int(asym.argmax()), size)
        raise SpaceError(
            "space.kernel", f"expected a symmetric matrix; [{i}][{j}] = {K[i, j]:g} but [{j}][{i}] = {K[j, i]:g}"
        )
    eigenvalues = torch.linalg.eigvalsh(K)
    if float(eigenvalues[0]) < -PSD_TOLERANCE * max(float(eigenvalues[-1]), 1e-12):
        raise SpaceError(
            "space.kernel", f"expected a positive semi-definite matrix; smallest eigenvalue {float(eigenvalues[0]):g}"
        )
    if float(K.diagonal().min()) <= 0:
        raise SpaceError("space.kernel", "expected a positive diagonal (each candidate's prior variance)")
    return K


def parse_finite(raw: dict[str, Any]) -> FiniteSpec:
    """The finite space, or SpaceError naming the field (``space.candidates[3].params.x``...)."""
    import torch  # here, not at import: the CLI's read verbs need no torch

    unknown = set(raw) - {"kind", "candidates", "csv", "kernel", "allow_repeats"}
    if unknown:
        raise SpaceError(
            "space", f"unknown keys {sorted(unknown)}; expected kind, candidates or csv, kernel, allow_repeats"
        )
    if ("candidates" in raw) == ("csv" in raw):
        raise SpaceError(
            "space.candidates", "expected either 'candidates' (a list) or 'csv' (text), not both or neither"
        )
    allow = raw.get("allow_repeats", False)
    if not isinstance(allow, bool):
        raise SpaceError("space.allow_repeats", f"expected true or false, got {allow!r}")
    where = "space.candidates"
    rows = raw["candidates"] if "candidates" in raw else _rows_from_csv(raw["csv"])
    if not isinstance(rows, list) or not rows:
        raise SpaceError(where, 'expected a non-empty list of {"id": ..., "params": {...}}')
    if len(rows) > MAX_CANDIDATES:
        raise SpaceError(
            where, f"at most {MAX_CANDIDATES} candidates, got {len(rows) if 'candidates' in raw else 'more'}"
        )
    names: list[str] = []
    ids: list[str] = []
    seen: dict[str, int] = {}
    values: list[list[float]] = []
    for i, row in enumerate(rows):
        at = f"{where}[{i}]"
        if not isinstance(row, dict) or not isinstance(row.get("params"), dict) or set(row) - {"id", "params"}:
            raise SpaceError(at, 'expected {"id": "...", "params": {name: number}} (id optional)')
        params = row["params"]
        if i == 0:
            names = list(params)
            if not names or any(not isinstance(n, str) or not n or len(n) > 200 for n in names):
                raise SpaceError(f"{at}.params", "expected 1 or more parameters named by 1..200 characters")
        elif list(params) != names and set(params) != set(names):
            missing, extra = sorted(set(names) - set(params)), sorted(set(params) - set(names))
            what = f"missing {missing}" if missing else f"unknown {extra}"
            raise SpaceError(f"{at}.params", f"expected the parameters {names} of candidates[0]; {what}")
        values.append([number(f"{at}.params.{n}", params[n]) for n in names])
        cid = row.get("id", str(i))
        if not isinstance(cid, str | int) or isinstance(cid, bool) or not str(cid) or len(str(cid)) > 200:
            raise SpaceError(f"{at}.id", f"expected a string of 1..200 characters, got {cid!r}")
        cid = str(cid)
        if cid in seen:
            raise SpaceError(f"{at}.id", f"duplicate id {cid!r} (also candidates[{seen[cid]}])")
        seen[cid] = i
        ids.append(cid)
    X = torch.tensor(values, dtype=torch.float64)
    wide = ~torch.isfinite(X.max(0).values - X.min(0).values)  # scaled to [0, 1], every value would be 0 or NaN
    if bool(wide.any()):
        name = names[int(wide.nonzero()[0])]
        raise SpaceError(f"{where}[0].params.{name}", "expected values whose range (max - min) is a finite number")
    kernel_raw = raw.get("kernel")
    kernel, kind = None, None
    if kernel_raw == "cosine":
        if bool((X.norm(dim=1) == 0).any()):
            i = int((X.norm(dim=1) == 0).nonzero()[0])
            raise SpaceError(f"{where}[{i}].params", "the cosine kernel needs a non-zero parameter vector")
        kind = "cosine"
    elif kernel_raw is not None:
        kernel, kind = _kernel(kernel_raw, len(ids)), "matrix"
    return FiniteSpec(names, ids, X, kernel, kind, allow)


class Candidates:
    """A finite study's candidates as the engine uses them: loaded once per process (they never change)."""

    def __init__(self, rows: list[Any], kernel: bytes | None, summary: dict[str, Any]) -> None:
        import torch

        self.ids: list[str] = [r.cid for r in rows]
        self.params: list[dict[str, Any]] = [r.params for r in rows]
        self.x: list[list[float]] = [r.x for r in rows]
        self.names: list[str] = list(summary["params"])
        self.allow_repeats: bool = bool(summary.get("allow_repeats"))
        self.kernel_kind: str | None = summary.get("kernel")
        size = len(rows)
        self.X = torch.tensor(self.x, dtype=torch.float64).reshape(size, -1)
        self.kernel = (
            torch.frombuffer(bytearray(kernel), dtype=torch.float64).reshape(size, size) if kernel is not None else None
        )
        self.features = None
        if self.kernel_kind == "cosine":
            values = torch.tensor([[p[n] for n in self.names] for p in self.params], dtype=torch.float64)
            self.features = values / values.norm(dim=1, keepdim=True)
        self._by_values = {self._key(p): i for i, p in reversed(list(enumerate(self.params)))}

    @property
    def size(self) -> int:
        return len(self.ids)

    def _key(self, params: dict[str, Any]) -> tuple[float, ...]:
        return tuple(float(params[n]) for n in self.names)

    def find(self, params: Any, field: str = "params") -> int:
        """The index of the (first) candidate with exactly these values, or SpaceError naming the field."""
        check_names(params, self.names, field)
        for n in self.names:
            number(f"{field}.{n}", params[n])
        index = self._by_values.get(self._key(params))
        if index is None:
            raise SpaceError(field, "not one of the study's candidates (a finite space takes only its candidates)")
        return index
