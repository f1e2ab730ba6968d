"""``qlognehvi``: BoTorch's qLogNoisyExpectedHypervolumeImprovement (Daulton, Balandat, Bakshy, NeurIPS 2021;
Ament et al., "Unexpected Improvements to Expected Improvement", NeurIPS 2023), a global reference policy for several
objectives on small d. Every objective is minimised (``request.Y``: n x k).

    design:   n_init = 2 (d + 1) Sobol points in [0, 1]^d (inside the parameter constraints), as BoTorch's tutorials
    models:   one SingleTaskGP per objective (``gp.fit_model``: ARD Matérn-5/2, BoTorch's priors, warm-started), in a
              ModelListGP; the objectives negated for BoTorch, which maximises, as is the reference point
    batch:    q = max(the ask's count, batch_size) points jointly maximising qLogNEHVI(X_baseline = every observed
              point, X_pending = the pending points, ``mc_samples`` Sobol QMC samples seeded per call), with BoTorch's
              ``optimize_acqf`` (L-BFGS-B, SLSQP under parameter constraints) from ``num_restarts`` starts chosen among
              ``raw_samples`` random q-batches (``acqopt.initial_conditions``: BoTorch's rule, explicit generator; under
              parameter constraints the best of hit-and-run q-batches, ``polytope.sample``), and from ``front_starts``
              (5) more, each at points of the observed feasible Pareto front drawn at random, as Optuna's GPSampler
              starts its local searches; ``hvi_search.py``, which morbo's ``acquisition: "lognehvi"`` shares

The reference point is ``request.reference_point`` (the engine's), else ``pareto.infer_reference_point`` of the data.
Outcome constraints (``request.C``: n x m, <= 0 where one holds): one more GP per constraint on bilog(c_j / s_j),
bilog(c) = sign(c) log(1 + |c|) and s_j the constraint's median |c_j| where that exceeds 1 (``violation.typical_size``,
as turbo's SCBO), passed as BoTorch's ``constraints=`` callables (a sigmoid-smoothed feasibility weight on each sample).
Under parameter constraints SLSQP's result is clipped to the cube, projected onto the equalities and, if still outside,
pulled back towards its start (``acqopt.inside``). One objective (``request.Y`` None): qLogNoisyExpectedImprovement
on y, the same models and search. Defaults are modest for a 2-core machine:
4 restarts, 128 raw samples, 64 MC samples, 100 L-BFGS-B iterations (BoTorch's tutorial: 10, 512, 128, 200), and
5 front starts: on VehicleSafety after 150 results they found a higher acquisition in 3 of 12 searches (by 0.6-1.2
in log; results/acquisition_search.md), and through ``auto`` the log10 hypervolume difference at 200 went from 0.090
to -0.454 (multiobjective_findings.md, "qlognehvi's acquisition search starts at front points too").
BoTorch's baseline pruning is off: it draws its sampler's seed from torch's global RNG. Options that make the model
Ax's (``auto`` runs the first two up to 10 coordinates without outcome constraints, and at d <= 5 Ax's search,
``num_restarts`` 20 and ``raw_samples`` 1,024, for the first 20 d results): ``n_init`` 5;
``warm_start: false``, each GP fitted from its priors' modes rather than its last fit; ``winsorize``, each objective
clipped for its GP above max(q3, ref) + 1.5 (max(q3, ref) - q1), Ax's Winsorize for an objective threshold (on top
of the first two, level to worse on DTLZ2-10: results/probes/mo_dtlz2_10_qlognehvi_small_design_winsorize_100.md);
``kernel: "rbf"`` (worse on DTLZ2-10: results/probes/mo_dtlz2_10_qlognehvi_ninit5_model.md).

Cost bounded in n (``subsets.py``): past ``max_data`` results (500) the GPs fit a subset, the first Pareto layers
and the rest evenly spaced; past ``max_baseline`` results (256) the baseline is the first 256 by Pareto layer, the
layer that fits only in part thinned to points spread over it. The box decompositions over the sampled fronts
cost about the square of the front's size (at d = 5, 3 objectives, one thread: 9 s a suggest with a front of 107,
35 s with 206), so the bound caps it; up to both bounds every result counts, as before
(results/policy_compute_time_mo.md).

>>> request = dataclasses.replace(make_request("qlognehvi", X, Y[:, 0], count=2), Y=Y, reference_point=ref)
>>> QLogNEHVI().suggest(request).X                    # 2 x d
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from botorch.models import ModelListGP
from pydantic import Field

from localbo.policies import register, subsets, warping
from localbo.policies.acqopt import unit_bounds
from localbo.policies.base import (
    Display,
    KernelKind,
    Policy,
    PolicyConfig,
    PolicyConfigError,
    PolicyState,
    Progress,
    Suggestion,
    SuggestRequest,
)
from localbo.policies.gp import Hypers, fit_model, noise_floor_field, to_state
from localbo.policies.hvi_search import SearchSettings, log_nehvi, maximise
from localbo.policies.pareto import feasible, hypervolume, infer_reference_point, pareto_front
from localbo.policies.polytope import design
from localbo.policies.violation import bilog, typical_size

SOBOL_MAX_DIM = torch.quasirandom.SobolEngine.MAXDIM


class QLogNEHVIConfig(PolicyConfig):
    kernel: Literal["rbf", "matern52"] = Field(default="matern52", description="ARD kernel of the GPs")
    n_init: int | None = Field(default=None, ge=2, le=10_000, description="Initial Sobol design (2 (d + 1))")
    batch_size: int = Field(default=1, ge=1, le=64, description="Points per batch q (at least the ask's count)")
    num_restarts: int = Field(default=4, ge=1, le=64, description="optimize_acqf starts")
    raw_samples: int = Field(default=128, ge=2, le=10_000, description="Random q-batches the starts are chosen from")
    # 64: 16 were worse on 6 of 6 runs for 2.5x less CPU (multiobjective_findings.md, "16 MC samples instead of 64")
    mc_samples: int = Field(default=64, ge=4, le=2048, description="Sobol QMC samples of the acquisition")
    maxiter: int = Field(default=100, ge=1, le=2000, description="L-BFGS-B (SLSQP) iterations per start")
    front_starts: int = Field(
        default=5, ge=0, le=64,
        description="More starts, each at points of the observed feasible Pareto front drawn at random (0: none)",
    )  # fmt: skip
    noise_floor: float = noise_floor_field()
    warm_start: bool = Field(
        default=True,
        description="Fit each GP from its last fit's hyperparameters (false: from the priors' modes, as Ax)",
    )
    winsorize: bool = Field(
        default=False,
        description="GPs on each objective clipped above max(q3, ref) + 1.5 (max(q3, ref) - q1), as Ax's Winsorize",
    )
    max_data: int | None = Field(
        default=500, ge=10, le=100_000, description="Results the GPs fit at most (subsets.py); null: every one"
    )
    max_baseline: int | None = Field(
        default=256, ge=2, le=100_000,
        description="Observed points the acquisition improves on at most, the first Pareto layers; null: every one",
    )  # fmt: skip


class QLogNEHVIState(PolicyState):
    version = 1
    design_asked: int = 0
    design_size: int | None = None  # the design's size (n_init, else 2 (d + 1)): the display's progress against it
    n: int = 0  # results seen by the last call
    hypers: list[Hypers] = Field(default_factory=list)  # the objectives' last fits
    constraint_hypers: list[Hypers] = Field(default_factory=list)  # the constraints' last fits
    hypervolume: float | None = None  # of the observed front at the last call
    front_size: int = 0
    reference_point: list[float] | None = None
    acquisition: float | None = None  # the best q-batch's log acquisition value
    bounded: str | None = None  # past max_data / max_baseline: how many results the GPs and the baseline hold


@register
class QLogNEHVI(Policy[QLogNEHVIConfig, QLogNEHVIState]):
    name = "qlognehvi"
    Config = QLogNEHVIConfig
    State = QLogNEHVIState
    spaces = frozenset({"continuous", "categorical"})
    handles = frozenset({"objectives", "constraints", "parameter_constraints"})

    @classmethod
    def check_study(cls, dim: int, config: QLogNEHVIConfig) -> None:
        if dim > SOBOL_MAX_DIM:
            raise PolicyConfigError("space", f"qlognehvi supports at most {SOBOL_MAX_DIM} coordinates, got {dim}")

    @classmethod
    def kernel(cls, config: QLogNEHVIConfig) -> KernelKind:
        return config.kernel

    @classmethod
    def display(cls, state: QLogNEHVIState, config: QLogNEHVIConfig, n_complete: int) -> Display | None:
        numbers: dict[str, float | int | str | None] = {
            "front size": state.front_size,
            "hypervolume": state.hypervolume,
            "log acquisition": state.acquisition,
        }
        if state.bounded is not None:
            numbers["bounded (GP data, baseline)"] = state.bounded
        if state.reference_point is not None:
            # the policies minimise: a maximised objective's bound shows negated (the study's own is in its summary)
            numbers["reference point, minimised"] = ", ".join(f"{v:.4g}" for v in state.reference_point)
        if not state.hypers:
            total = config.n_init or state.design_size or max(state.design_asked, 1)
            progress = Progress(done=min(state.design_asked, total), total=total, label="design points planned")
            return Display(phase="initial design", progress=progress, numbers=numbers)
        return Display(phase="model-based", numbers=numbers)

    def suggest(self, request: SuggestRequest[QLogNEHVIConfig, QLogNEHVIState]) -> Suggestion:
        config, state = request.config, request.state
        d, dev = request.dim, request.device
        q = max(request.count, config.batch_size)
        n_init = config.n_init or 2 * (d + 1)
        X = request.X.detach().to("cpu", torch.float64).reshape(-1, d)
        n = X.shape[0]
        if n < n_init or n < 2:
            k = max(q, n_init - state.design_asked)
            points = design(request.polytope, d, request.seed % 2**31, state.design_asked, k).to(dev)
            update = {"design_asked": state.design_asked + k, "design_size": n_init}
            return Suggestion(X=points, state=state.model_copy(update=update))
        Y = (request.Y if request.Y is not None else request.y.reshape(-1, 1)).detach().to("cpu", torch.float64)
        Y = Y.reshape(n, -1)
        k = Y.shape[1]
        C = request.C.detach().to("cpu", torch.float64).reshape(n, -1) if request.C is not None else None
        C = C if C is not None and C.shape[-1] else None
        m = 0 if C is None else C.shape[1]
        ok = feasible(C, n)
        if request.reference_point is not None:
            ref = request.reference_point.detach().to("cpu", torch.float64).reshape(-1)
        else:
            ref = infer_reference_point(Y[ok] if bool(ok.any()) else Y)

        # values past 1e100 (a lab's sentinel of 1e300) square past the double range in the posterior's covariance:
        # the models and the acquisition see each objective divided by its size (the argmax is the same)
        size_y = torch.maximum(Y.abs().amax(0), ref.abs())
        scale = torch.where(size_y > 1e100, size_y, torch.ones_like(size_y))
        Ys, ref_s = Y / scale, ref / scale
        g = request.generator
        keep = config.warm_start  # else each GP starts from its priors' modes
        warm: list[Hypers | None] = list(state.hypers) if keep and len(state.hypers) == k else [None] * k
        warm_c: list[Hypers | None] = [None] * m
        if keep and len(state.constraint_hypers) == m:
            warm_c = list(state.constraint_hypers)
        floor = config.noise_floor
        fit = torch.arange(n)  # the GPs' data, bounded past max_data
        if config.max_data is not None and n > config.max_data:
            fit = subsets.best_and_spread(subsets.layer_rank(Y, C, config.max_data // 2), None, config.max_data)
        base = torch.arange(n)  # the acquisition's baseline, bounded past max_baseline
        if config.max_baseline is not None and n > config.max_baseline:
            base = subsets.front_first(Y, C, config.max_baseline)
        Xf, Cf = X[fit], (C[fit] if C is not None else None)
        Ym = Ys  # what the objectives' GPs see: with ``winsorize`` each clipped above its fence
        if config.winsorize:
            Ym = torch.stack([warping.winsorized(Ys[:, j], float(ref_s[j])) for j in range(k)], -1)
        objectives = [
            fit_model(Xf, Ym[fit, j], config.kernel, warm[j], device=dev, generator=g, noise_floor=floor)
            for j in range(k)
        ]
        size = typical_size(Cf) if Cf is not None else torch.ones(0, dtype=torch.float64)
        constraints = [
            fit_model(
                Xf, bilog(Cf[:, j] / size[j]), config.kernel, warm_c[j], device=dev, generator=g, noise_floor=floor
            )
            for j in range(m)
            if Cf is not None
        ]
        like = objectives[0].train_inputs[0]  # the models' device and dtype
        settings = SearchSettings(
            config.num_restarts, config.raw_samples, config.mc_samples, config.maxiter, config.front_starts
        )
        pending = request.X_pending.detach().reshape(-1, d)
        acq = log_nehvi(ModelListGP(*objectives, *constraints), X[base].to(like), pending, ref_s, k, m, settings, g)
        non_dominated = pareto_front(Y, C)
        points, value = maximise(acq, q, unit_bounds(d).to(like), request.polytope, settings, g, X[non_dominated])
        front = non_dominated & (Y < ref).all(-1)
        new = state.model_copy(
            update={
                "n": n,
                "hypers": [to_state(model) for model in objectives],
                "constraint_hypers": [to_state(model) for model in constraints],
                "hypervolume": _finite_or_none(hypervolume(Y[front], ref)) if bool(front.any()) else 0.0,
                "front_size": int(front.sum()),
                "reference_point": ref.tolist(),
                "acquisition": value,
                "bounded": f"{fit.numel()}, {base.numel()} of {n}" if min(fit.numel(), base.numel()) < n else None,
            }
        )
        return Suggestion(X=points.to(dev), state=new)


def _finite_or_none(value: float) -> float | None:
    """A volume past the double range (objectives near 1e300) has no number: None, as the study's summary says."""
    return value if math.isfinite(value) else None
