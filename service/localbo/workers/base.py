"""The executor interface, and the one way every backend calls a policy."""

from __future__ import annotations

from typing import Protocol

from localbo.policies import PolicyRetry, Suggestion, SuggestRequest, get_policy


class Executor(Protocol):
    name: str

    def run(self, policy: str, request: SuggestRequest, queue: str) -> Suggestion:
        """The policy's suggestion for ``request``; raises what the policy raised. ``queue``: cpu | gpu."""
        ...

    def close(self) -> None: ...


def run_suggest(policy: str, request: SuggestRequest) -> Suggestion:
    """``policy.suggest(request)``, once more on ``PolicyRetry`` (the taxonomy in policies/base.py)."""
    cls = get_policy(policy)
    try:
        return cls().suggest(request)
    except PolicyRetry:
        return cls().suggest(request)
