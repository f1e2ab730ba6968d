"""Linear policies on gymnasium's CartPole-v1, Swimmer-v5 and Hopper-v5 (GIBO/MPD/MinUCB's RL tasks).

The policy is a = W s with W of shape (actions x observations), flattened row by row (the weight
of GIBO's one-layer ``MLP``), no bias and no state normalisation (algorithms.md 4.2; MinUCB's
Hopper has 33 parameters this way): CartPole 4 parameters (push right when s.w > 0), Swimmer
16, Hopper 33. Continuous actions are clipped to the action space [-1, 1]. The parameters live
in [-PARAM_BOUND, PARAM_BOUND]^d (GIBO searches an unbounded space from 0; the service needs a box).

One evaluation is one seeded episode (``episode(x, seed)``): its return, the environment's own
reward summed (no scaling, Hopper's healthy reward kept). ``value(x)`` is the mean return over
``TEST_EPISODES`` fixed seeds, the same for every run: what the report records for an iterate.
gymnasium and mujoco are imported only when an environment is built (the ``bench`` extra).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

PARAM_BOUND = 1.0
TEST_EPISODES = 5


@dataclass(frozen=True)
class Task:
    env_id: str
    observations: int
    actions: int
    discrete: bool  # CartPole: one output, action 1 when positive
    horizon: int  # the environment's own episode length cap

    @property
    def dim(self) -> int:
        return self.observations * self.actions


TASKS = {
    "cartpole": Task("CartPole-v1", 4, 1, True, 500),
    "swimmer": Task("Swimmer-v5", 8, 2, False, 1000),
    "hopper": Task("Hopper-v5", 11, 3, False, 1000),
}


class LinearPolicyTask:
    """Episodes of a linear policy on one environment, with an optional shorter horizon (smoke runs)."""

    def __init__(self, task: Task, horizon: int | None = None) -> None:
        import gymnasium as gym

        self.task = task
        self.horizon = horizon or task.horizon
        self.env = gym.make(task.env_id, max_episode_steps=self.horizon)

    def episode(self, x: Tensor, seed: int) -> float:
        """The return of one episode of the policy with parameters ``x`` (d, user units), reset with ``seed``."""
        W = np.asarray(x.detach().cpu().reshape(self.task.actions, self.task.observations), dtype=np.float64)
        obs, _ = self.env.reset(seed=seed)
        total = 0.0
        while True:
            a = W @ obs
            action = int(a[0] > 0) if self.task.discrete else np.clip(a, -1.0, 1.0)
            obs, reward, terminated, truncated, _ = self.env.step(action)
            total += float(reward)
            if terminated or truncated:
                return total

    def value(self, X: Tensor) -> Tensor:
        """Mean return over the ``TEST_EPISODES`` test seeds, per row of X (n x d)."""
        seeds = [10_000 + k for k in range(TEST_EPISODES)]  # apart from the training seeds' stream
        return torch.tensor(
            [float(np.mean([self.episode(x, s) for s in seeds])) for x in X.reshape(-1, self.task.dim)],
            dtype=torch.float64,
        )
