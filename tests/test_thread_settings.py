"""GPyTorch's settings are per thread once ``localbo.policies`` is imported (policies/thread_settings.py)."""

from __future__ import annotations

import threading

import gpytorch
import localbo.policies  # noqa: F401  (installs the per-thread settings)
import torch
from botorch.models import SingleTaskGP


def test_a_setting_entered_in_one_thread_is_not_seen_in_another() -> None:
    inside, seen = threading.Event(), {}
    leave = threading.Event()

    def holder() -> None:
        with gpytorch.settings.fast_pred_var(), gpytorch.settings.cg_tolerance(0.123):
            seen["holder"] = (gpytorch.settings.fast_pred_var.on(), gpytorch.settings.cg_tolerance.value())
            inside.set()
            leave.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert inside.wait(30)
    seen["other"] = (gpytorch.settings.fast_pred_var.on(), gpytorch.settings.cg_tolerance.value())
    leave.set()
    thread.join()
    assert seen["holder"] == (True, 0.123)
    assert seen["other"] == (False, 1.0), "the defaults, whatever the other thread entered"
    assert (gpytorch.settings.fast_pred_var.on(), gpytorch.settings.cg_tolerance.value()) == (False, 1.0)


def test_posteriors_computed_at_once_in_two_threads_equal_the_one_computed_alone() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(12, 3, generator=g, dtype=torch.float64)
    y = (X - 0.3).pow(2).sum(-1, keepdim=True)
    C = torch.rand(2000, 3, generator=g, dtype=torch.float64)

    def posterior() -> torch.Tensor:
        model = SingleTaskGP(X, y).eval()
        with torch.no_grad():
            p = model.posterior(C)
            return torch.cat([p.mean, p.variance], -1)

    alone = posterior()
    for _ in range(5):
        got: dict[int, torch.Tensor] = {}
        threads = [threading.Thread(target=lambda s=s, got=got: got.__setitem__(s, posterior())) for s in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert torch.equal(got[0], alone) and torch.equal(got[1], alone)
