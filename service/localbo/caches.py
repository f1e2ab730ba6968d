"""A bounded least-recently-used cache: per-process copies of what never changes (parsed spaces, candidates).

Keys are a study's identity (id, created_at), never its name: a study deleted and created again under
the same name gets fresh entries. ``max_cost`` bounds the total cost (entries, or bytes with ``cost``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedCache(Generic[V]):
    def __init__(self, max_cost: int, cost: Callable[[V], int] = lambda _: 1) -> None:
        self.max_cost = max_cost
        self._cost = cost
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._guard = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        """The cached value, or ``make()``'s (kept unless it alone exceeds the bound)."""
        with self._guard:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit[0]
        value = make()  # outside the lock: loading candidates may take a while
        cost = self._cost(value)
        with self._guard:
            if key not in self._items and cost <= self.max_cost:
                self._items[key] = (value, cost)
                self._total += cost
                while self._total > self.max_cost:
                    _, (_, old) = self._items.popitem(last=False)
                    self._total -= old
        return value

    def __len__(self) -> int:
        return len(self._items)

    @property
    def total_cost(self) -> int:
        return self._total
