"""The inline executor: policies run in a bounded pool of threads of the API process."""

from __future__ import annotations

from concurrent.futures import CancelledError, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from localbo.policies import Suggestion, SuggestRequest
from localbo.workers.base import PolicyTimeout, run_suggest


class InlineExecutor:
    """At most ``max_workers`` computations at once, so refits of many studies cannot swamp the CPU."""

    name = "inline"

    def __init__(self, max_workers: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="localbo-policy")

    def run(
        self, policy: str, request: SuggestRequest, queue: str = "cpu", timeout: float = 900.0, local: bool = False
    ) -> Suggestion:
        """A thread cannot be stopped: past ``timeout`` the caller moves on and the computation's answer is
        dropped when it ends (it holds one of the pool's places until then)."""
        try:
            job = self._pool.submit(run_suggest, policy, request)
        except RuntimeError as exc:  # closed: the server is shutting down, as for a job the close cancelled
            raise CancelledError(str(exc)) from exc
        try:
            return job.result(timeout=timeout)
        except FutureTimeout:
            job.cancel()  # still queued: it never starts
            raise PolicyTimeout(f"{policy} computed longer than {timeout:g} s") from None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
