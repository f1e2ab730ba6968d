"""Parameter importance, two ways: from a fitted ARD GP's posterior mean, and model-free from a random forest.

GP (``gp_importance``): the mean squared gradient of the fitted GP's posterior mean over the points it was
fitted to (the region the study explored), per unit-cube coordinate c:

    I_j  ∝  sum_{c in block(j)} mean_i (d mu / d x_c (x_i))^2      (a categorical's one-hot block summed)

normalised to sum to 1. Unlike 1 / lengthscale, it is 0 for a coordinate the data never varied and small
for a short lengthscale carrying a small effect.

Forest (``forest_importance``): out-of-bag permutation importance of a scikit-learn RandomForestRegressor
fitted to the same points (values standardised): each parameter's columns (a categorical's whole block) are
permuted together, ``repeats`` times, and each point is predicted only by the trees that did not see it
(its out-of-bag trees):

    I_j  ∝  max(0, mean_r MSE_oob(f(X with block j permuted, r), y) - MSE_oob(f(X), y))

normalised to sum to 1; None when no permutation changes the error (the values do not depend on the
points, or they are constant). Both take ``blocks``: the column indices of each parameter, in space order.

It is a rough, model-free check, not a second estimate of the same thing: it measures how much the forest's
error grows when a parameter is scrambled (close to the share of the values' variance it explains), not the
mean squared slope the GP's number is, so a small steady slope scores near 0 here and a strong curvature
scores more than its share. Scored on the points the forest was fitted to (as before), a forest that has
memorised a few dozen points credits a parameter with no effect at all; scored out of bag it does not
(issue 27: a no-effect parameter had ranked above one with a 0.11 share).
"""

from __future__ import annotations

from typing import Any

import numpy as np

FOREST_TREES = 64
FOREST_REPEATS = 5

GP_METHOD = (
    "mean squared gradient of the posterior mean of an ARD GP (policies/gp.py: BoTorch SingleTaskGP, MAP fit, "
    "inputs in the unit cube, values standardised) over the fitted points, per parameter (a categorical's one-hot "
    "coordinates summed); normalised to sum to 1"
)
FOREST_METHOD = (
    f"a rough model-free check: out-of-bag permutation importance of a random forest (scikit-learn "
    f"RandomForestRegressor, {FOREST_TREES} trees, on the unit-cube inputs and standardised values): mean increase "
    f"in the out-of-bag squared error over {FOREST_REPEATS} permutations of each parameter's columns, negatives as 0, "
    "normalised to sum to 1; it measures the variance a parameter explains, not its mean squared slope (the GP's "
    "number), so small steady slopes score lower here"
)


def _normalised(scores: list[float]) -> list[float] | None:
    total = sum(scores)
    if not total > 0 or not np.isfinite(total):
        return None
    return [s / total for s in scores]


def gp_importance(model: Any, blocks: list[list[int]]) -> list[float] | None:
    """model: a fitted BoTorch GP (inputs n x d in the unit cube); one share per block."""
    import torch

    X = model.train_inputs[0].detach().clone().requires_grad_(True)  # n x d
    mean = model.posterior(X).mean.sum()  # each point's mean depends on its own row only
    (grad,) = torch.autograd.grad(mean, X)  # n x d
    per_column = (grad.detach() ** 2).mean(0).tolist()
    return _normalised([sum(per_column[c] for c in block) for block in blocks])


def forest_importance(X: np.ndarray, y: np.ndarray, blocks: list[list[int]], seed: int = 0) -> list[float] | None:
    """X: n x d in the unit cube, y: n; one share per block (None: nothing explains the values)."""
    from sklearn.ensemble import RandomForestRegressor

    scale = float(y.std())
    if not (scale > 0 and np.isfinite(scale)):  # constant values, or so large their spread overflows
        return None
    target = (y - y.mean()) / scale
    forest = RandomForestRegressor(n_estimators=FOREST_TREES, min_samples_leaf=2, random_state=seed, n_jobs=1)
    forest.fit(X, target)
    n = len(X)
    # each tree's out-of-bag rows: the points its bootstrap sample left out
    unseen = []
    for drawn in forest.estimators_samples_:
        mask = np.ones(n, dtype=bool)
        mask[drawn] = False
        unseen.append(mask)

    def oob_error(points: np.ndarray) -> float:
        total, count = np.zeros(n), np.zeros(n)
        for tree, mask in zip(forest.estimators_, unseen, strict=True):
            if mask.any():
                total[mask] += tree.predict(points[mask])
                count[mask] += 1
        scored = count > 0
        if not scored.any():
            return float("nan")
        return float(np.mean((total[scored] / count[scored] - target[scored]) ** 2))

    base = oob_error(X)
    if not np.isfinite(base):
        return None
    rng = np.random.default_rng(seed)
    scores = []
    for block in blocks:
        increases = []
        for _ in range(FOREST_REPEATS):
            shuffled = X.copy()
            shuffled[:, block] = X[rng.permutation(n)][:, block]  # the block's columns move together
            increases.append(oob_error(shuffled) - base)
        scores.append(max(0.0, float(np.mean(increases))))
    return _normalised(scores)
