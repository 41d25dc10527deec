"""Per-provider concurrency limits: a threading semaphore for sync calls, an asyncio one per event loop."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager


class ConcurrencyLimits:
    """In-flight calls per key (a server URL or a provider name). The first limit set for a key wins,
    unless a later one is lower: a provider's rate limit is shared by everyone calling it.

    >>> with limits.hold("openai", 4): ...
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sizes: dict[str, int] = {}
        self._threads: dict[str, threading.BoundedSemaphore] = {}
        # asyncio semaphores belong to one event loop; tests and scripts run several loops in turn
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
            weakref.WeakKeyDictionary()
        )

    def _size(self, key: str, limit: int) -> int:
        limit = max(1, limit)
        current = self._sizes.get(key)
        if current is None or limit < current:
            self._sizes[key] = limit
            self._threads.pop(key, None)  # rebuilt at the new size (in-flight holders finish on the old one)
            for per_loop in self._loops.values():
                per_loop.pop(key, None)
        return self._sizes[key]

    def limit(self, key: str) -> int | None:
        return self._sizes.get(key)

    @contextmanager
    def hold(self, key: str, limit: int) -> Iterator[None]:
        with self._lock:
            size = self._size(key, limit)
            semaphore = self._threads.setdefault(key, threading.BoundedSemaphore(size))
        with semaphore:
            yield

    @asynccontextmanager
    async def ahold(self, key: str, limit: int) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        with self._lock:
            size = self._size(key, limit)
            semaphore = self._loops.setdefault(loop, {}).setdefault(key, asyncio.Semaphore(size))
        async with semaphore:
            yield


SHARED_LIMITS = ConcurrencyLimits()
