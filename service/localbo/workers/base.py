"""The executor interface, and the one way every backend calls a policy."""

from __future__ import annotations

from typing import Protocol

from localbo import metrics
from localbo.policies import Suggestion, SuggestRequest, get_policy


class PolicyTimeout(Exception):
    """The computation ran past ``LOCALBO_POLICY_TIMEOUT_SECONDS``; the planner falls back and frees the claim."""


class Executor(Protocol):
    name: str

    def run(self, policy: str, request: SuggestRequest, queue: str, timeout: float, local: bool = False) -> Suggestion:
        """The policy's suggestion for ``request``, or what the policy raised, or ``PolicyTimeout`` after
        ``timeout`` seconds. ``queue``: cpu | gpu. ``local``: compute in this process (a request too big
        to send, such as a finite space's candidates, or too cheap to be worth the trip)."""
        ...

    def close(self) -> None: ...


def run_suggest(policy: str, request: SuggestRequest) -> Suggestion:
    """``policy.suggest(request)``: any exception is the planner's to handle (policies/base.py)."""
    with metrics.timed_policy(policy, request.device.type):
        return get_policy(policy)().suggest(request)
