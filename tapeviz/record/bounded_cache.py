"""BoundedCache: a dict that never holds more than a set number of entries.

Every stage keeps things it would rather not compute twice (an explorer's pictures, a
training run's layouts, the memos of the recording's stack walks) for as long as a
session runs, so each such dict has a bound. The bound is kept here, once: reading is a
plain dict's (``cache.get(key)``, ``key in cache``: no Python call on the hot path), and
only adding an entry (:meth:`BoundedCache.put`, :meth:`BoundedCache.fetch`) checks the size.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["BoundedCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(dict[K, V]):
    """At most ``size`` entries: adding one more first drops the oldest, or every entry
    with ``start_over=True`` (a large memo of cheap entries: no eviction order to keep).
    ``recency=True``: :meth:`fetch` counts a hit as new, so the least recently used entry
    is the one dropped (a slider going back and forth keeps what it shows)."""

    __slots__ = ("size", "start_over", "recency")

    def __init__(self, size: int, *, start_over: bool = False, recency: bool = False):
        if size < 1:
            raise ValueError(f"size={size!r}: a cache holds at least one entry")
        super().__init__()
        self.size = size
        self.start_over = start_over
        self.recency = recency

    def put(self, key: K, value: V) -> V:
        """Keep ``value`` under ``key`` (making room first); returns ``value``."""
        if key not in self and len(self) >= self.size:
            if self.start_over:
                self.clear()
            else:
                del self[next(iter(self))]
        self[key] = value
        return value

    def fetch(self, key: K, make: Callable[[], V]) -> V:
        """The value under ``key``, made by ``make()`` and kept when there is none."""
        try:
            value = self[key]
        except KeyError:
            return self.put(key, make())
        if self.recency:
            del self[key]
            self[key] = value  # now the newest
        return value
