"""Building a policy's SuggestRequest in tests: the library's builder (trial numbers 1..n, a fresh or given
state, a validated config)."""

from localbo.policies.requests import make_request

__all__ = ["make_request"]
