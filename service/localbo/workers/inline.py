"""The inline executor: policies run in a bounded pool of threads of the API process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from localbo.policies import Suggestion, SuggestRequest
from localbo.workers.base import run_suggest


class InlineExecutor:
    """At most ``max_workers`` computations at once, so refits of many studies cannot swamp the CPU."""

    name = "inline"

    def __init__(self, max_workers: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="localbo-policy")

    def run(self, policy: str, request: SuggestRequest, queue: str = "cpu") -> Suggestion:
        return self._pool.submit(run_suggest, policy, request).result()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
