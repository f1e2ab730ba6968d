"""What drives a study's value: parameter importance and the GP's posterior mean over a pair of parameters.

    analysis = Analysis(db, spaces)
    analysis.importance(name)            # {"parameters", "gp", "gp_method", "forest", "forest_method", ...}
    analysis.surface(name, "x", "y", 30) # {"xs", "ys", "mean", "fixed", ...} or {"available": false, "reason"}

Both read the study's last completed trials (unit-cube points and values as stored): at most
``GP_MAX`` feed an ARD GP (``policies/gp.py``'s fit; values standardised by its outcome transform, so
its posterior mean comes back in the study's units) and at most ``FOREST_MAX`` the random forest.
The fitted GP and each importance answer are cached per (study id, creation time, completed trials) in
small bounded LRU caches: a reload with no new result costs two indexed counts; one more result
refits. A study deleted and created again under its name never meets the old entries.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from localbo.caches import BoundedCache
from localbo.domain import StudySpace
from localbo.errors import InvalidInput
from localbo.spaces import Spaces
from localbo.storage import repository as repo
from localbo.studies import get_row, policy_display
from localbo.study_handle import StudyHandle, load_study

log = logging.getLogger("localbo.analysis")
MIN_COMPLETE = 5  # fewer completed trials: no importance, no surface
GP_MAX = 500  # the last this many completed trials feed the GP (a fit costs ~2 s on one core at 500 x 6)
FOREST_MAX = 2000  # ... and the random forest
FIT_MAXITER = 100  # L-BFGS-B iterations of the GP's MAP fit
SURFACE_SIZES = (5, 60)
MAX_WARM = 4096  # studies whose last fit's hyperparameters are kept


@dataclass
class Fitted:
    """A GP fitted to a study's last ``n_used`` completed trials (None: the fit failed, ``error`` says why)."""

    model: Any  # SingleTaskGP
    n_used: int
    kernel: str
    error: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # a model's first posterior builds caches


def _key(study: StudyHandle, n_complete: int) -> tuple[int, Any, int]:
    return (study.id, study.created_at, n_complete)


def blocks(space: StudySpace) -> list[list[int]]:
    """The unit-cube columns of each parameter, in space order (a categorical: its one-hot block)."""
    if space.box is None:
        return [[j] for j in range(space.dim)]
    out, at = [], 0
    for p in space.box.params:
        out.append(list(range(at, at + p.width)))
        at += p.width
    return out


def objective_of(study: StudyHandle) -> str | None:
    """The metric the analysis models: the trials' value, which is the (first) objective's (None: unnamed)."""
    return study.outcomes.objectives[0].metric if study.outcomes.objectives else None


class Analysis:
    def __init__(self, db: Engine, spaces: Spaces, max_models: int = 16, max_answers: int = 256) -> None:
        self.db, self.spaces = db, spaces
        self._models: BoundedCache[Fitted] = BoundedCache(max_models)
        self._importance: BoundedCache[dict[str, Any]] = BoundedCache(max_answers)
        self._surfaces: BoundedCache[dict[str, Any]] = BoundedCache(max_answers)
        # each study's latest fitted hyperparameters: the next fit (one more result) starts from them
        self._warm: dict[tuple[int, Any], Any] = {}
        self._warm_guard = threading.Lock()
        self._flights: dict[Any, threading.Lock] = {}  # one computation per key at a time (single flight)
        self._flights_guard = threading.Lock()

    def _once(self, cache: BoundedCache[Any], key: Any, make: Any) -> Any:
        """``cache.get(key, make)``, with concurrent misses of one key computed once: the page asks for the
        importance and a surface at the same moment, and both need the same fit."""
        with self._flights_guard:
            flight = self._flights.setdefault(key, threading.Lock())
        try:
            with flight:
                return cache.get(key, make)
        finally:
            with self._flights_guard:
                if not flight.locked():
                    self._flights.pop(key, None)

    def _read(self, name: str) -> tuple[StudyHandle, StudySpace, int]:
        with self.db.begin() as conn:
            row = get_row(conn, name)
            space = self.spaces.of(conn, row)
            return load_study(row, space), space, repo.count_complete(conn, row.id)

    def _points(self, study: StudyHandle, limit: int) -> tuple[list[list[float]], list[float]]:
        with self.db.begin() as conn:
            rows = repo.latest_complete(conn, study.id, limit)
        return [list(r.x) for r in rows], [float(r.value) for r in rows]

    def _fitted(self, study: StudyHandle, n_complete: int) -> Fitted:
        def fit() -> Fitted:
            import torch

            from localbo.policies import gp

            X, y = self._points(study, GP_MAX)
            kernel = study.kernel()
            Xt, yt = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
            study_key = (study.id, study.created_at)
            with self._warm_guard:
                warm = self._warm.get(study_key)
            try:
                model = gp.fit_model(Xt, yt, kernel, hypers=warm, maxiter=FIT_MAXITER)
                with self._warm_guard:
                    if len(self._warm) >= MAX_WARM:  # bounded: forgetting only means a cold start
                        self._warm.clear()
                    self._warm[study_key] = gp.to_state(model)
                return Fitted(model, len(X), kernel)
            except Exception as exc:  # a failed fit is a note on the page, not a 500
                log.exception("study %s: the analysis GP could not be fitted", study.name)
                return Fitted(None, len(X), kernel, f"{type(exc).__name__}: {exc}")

        return self._once(self._models, ("model", *_key(study, n_complete)), fit)

    # -- importance -------------------------------------------------------------------------------

    def importance(self, name: str) -> dict[str, Any]:
        study, space, n_complete = self._read(name)
        key = ("importance", *_key(study, n_complete))
        return self._once(self._importance, key, lambda: self._compute_importance(study, space, n_complete))

    def _compute_importance(self, study: StudyHandle, space: StudySpace, n_complete: int) -> dict[str, Any]:
        import numpy as np

        from localbo.analysis.importance import FOREST_METHOD, GP_METHOD, forest_importance, gp_importance

        groups = blocks(space)
        out: dict[str, Any] = {
            "parameters": space.names,
            "gp": None,
            "gp_method": GP_METHOD,
            "forest": None,
            "forest_method": FOREST_METHOD,
            "n_complete": n_complete,
            "objective": objective_of(study),
        }
        if n_complete < MIN_COMPLETE:
            return out | {"note": f"needs at least {MIN_COMPLETE} completed trials; the study has {n_complete}"}
        notes = []
        X, y = self._points(study, FOREST_MAX)
        if len(set(y)) < 2:
            return out | {"note": "every completed trial has the same value: nothing to attribute"}
        fitted = self._fitted(study, n_complete)
        out["gp_method"] = f"{GP_METHOD}; kernel {fitted.kernel}"
        if fitted.model is not None:
            with fitted.lock:
                out["gp"] = gp_importance(fitted.model, groups)
        notes.append(
            f"GP fitted to the last {fitted.n_used} of {n_complete} completed trials (by number)"
            + (f"; the fit failed: {fitted.error}" if fitted.error else "")
        )
        try:
            out["forest"] = forest_importance(np.asarray(X, dtype=float), np.asarray(y, dtype=float), groups)
            notes.append(f"forest fitted to the last {len(X)}")
            if out["forest"] is None:
                notes.append("no permutation changed the forest's error")
        except Exception as exc:  # a failed forest is a note, not a 500
            log.exception("study %s: the analysis forest failed", study.name)
            notes.append(f"the forest failed: {type(exc).__name__}: {exc}")
        return out | {"note": "; ".join(notes)}

    # -- the posterior mean over a pair of parameters ---------------------------------------------

    def surface(self, name: str, x: str, y: str, size: int) -> dict[str, Any]:
        from localbo.analysis.surface import NoSurface, axis

        study, space, n_complete = self._read(name)
        for where, param in (("x", x), ("y", y)):
            if param not in space.names:
                raise InvalidInput(where, f"expected one of the study's parameters {space.names}, got {param!r}")
        if x == y:
            raise InvalidInput("y", f"expected a parameter other than x ({x!r})")
        if not SURFACE_SIZES[0] <= size <= SURFACE_SIZES[1]:
            raise InvalidInput("size", f"expected {SURFACE_SIZES[0]}..{SURFACE_SIZES[1]}, got {size}")
        head = {"x": x, "y": y, "n_complete": n_complete, "objective": objective_of(study)}

        def unavailable(reason: str) -> dict[str, Any]:
            return head | {"available": False, "reason": reason}

        if not study.needs_history:
            return unavailable(f"the {study.policy_name} policy fits no model of the values")
        if space.candidates is not None and space.candidates.kernel_kind is not None:
            return unavailable(
                f"the study's prior kernel is given over its candidates ({space.candidates.kernel_kind}), "
                "not over its parameters"
            )
        if n_complete < MIN_COMPLETE:
            return unavailable(f"needs at least {MIN_COMPLETE} completed trials; the study has {n_complete}")
        try:
            ax, ay = axis(space, x, size), axis(space, y, size)
        except NoSurface as why:
            return unavailable(str(why))
        key = (*_key(study, n_complete), study.state_version, x, y, size)
        return self._surfaces.get(key, lambda: self._compute_surface(study, space, n_complete, ax, ay, head))

    def _compute_surface(
        self, study: StudyHandle, space: StudySpace, n_complete: int, ax: Any, ay: Any, head: dict[str, Any]
    ) -> dict[str, Any]:
        from localbo.analysis.surface import points

        def unavailable(reason: str) -> dict[str, Any]:
            return head | {"available": False, "reason": reason}

        size, x, y = len(ax.values), ax.name, ay.name
        base, fixed, fixed_at = self._fixed_point(study, space, n_complete)
        if base is None:
            return unavailable("no completed trial to hold the other parameters at")
        fitted = self._fitted(study, n_complete)
        if fitted.model is None:
            return unavailable(f"the GP could not be fitted ({fitted.error})")
        import torch

        try:
            with fitted.lock, torch.no_grad():
                mean = fitted.model.posterior(points(base, ax, ay)).mean.reshape(size, size)
        except Exception as exc:  # a numerical failure is a reason on the page, not a 500
            log.exception("study %s: the analysis GP's posterior failed", study.name)
            return unavailable(f"the GP's posterior could not be computed ({type(exc).__name__}: {exc})")
        if not bool(torch.isfinite(mean).all()):
            return unavailable("the GP's posterior mean is not finite here (values too large for float64?)")
        return head | {
            "xs": ax.values,
            "ys": ay.values,
            "mean": mean.tolist(),
            "log_x": ax.log,
            "log_y": ay.log,
            "fixed": {k: v for k, v in fixed.items() if k not in (x, y)},
            "fixed_at": fixed_at,
            "available": True,
            "model": f"ARD GP ({fitted.kernel}, MAP) on the last {fitted.n_used} of {n_complete} completed trials",
        }

    def _fixed_point(
        self, study: StudyHandle, space: StudySpace, n_complete: int
    ) -> tuple[list[float] | None, dict[str, Any], str]:
        """Where the other parameters are held: the policy's centre when its display has one, else the best
        trial (unit-cube point, the same in user units, "centre" | "best")."""
        display = policy_display(study, n_complete)
        centre = display.centre if display is not None else None
        if centre is not None and len(centre) == space.dim and space.candidates is None:
            base = space.snap([min(max(float(u), 0.0), 1.0) for u in centre])
            return base, space.params(base), "centre"
        with self.db.begin() as conn:
            best = repo.best_trial(conn, study.id, study.direction)
        if best is None:
            return None, {}, "best"
        return list(best.x), dict(best.params), "best"
