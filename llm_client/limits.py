"""Concurrency, requests-per-minute budget and retry policy for remote LLM calls. Pure Python (asyncio).

Transient faults (HTTP 429, 5xx, timeouts, dropped connections, malformed bodies) are retried with
exponential backoff and full jitter, honouring a server's Retry-After; anything else fails at once with
its reason.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from dataclasses import dataclass


class RateLimiter:
    """Spaces request starts so that at most ``rpm`` start in any minute (smoothly, no bursts past it)."""

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def acquire(self) -> None:
        if not self.interval:
            return
        loop = asyncio.get_running_loop()
        # The next slot counts from when this start really happens, not from when it was planned: a sleep that
        # overruns (a loaded machine) would otherwise let the next start catch up and come too soon after it.
        # Waiters queue on the lock, so starts keep their order.
        async with self._lock:
            wait = self._next - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            self._next = loop.time() + self.interval


class PrioritySlots:
    """At most ``n`` holders at once, like ``asyncio.Semaphore``, but a freed slot goes to the waiter with the
    lowest ``priority`` (ties: first come). Several streams sharing one endpoint's window each wait with the
    number of requests they still have to send, so a short stage (which the rest of its pipeline waits on)
    goes before the bulk of a long one, and the window stays full until the last stage."""

    def __init__(self, n: int):
        self._free = n
        self._waiters: list[tuple[float, int, asyncio.Future]] = []
        self._seq = itertools.count()

    async def acquire(self, priority: float = 0.0) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._seq), future))
        try:
            await future  # the releaser handed its slot over
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # handed over just as the wait was cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    base_delay: float = 0.5
    max_delay: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (attempt counts from 1): full jitter over an
        exponentially growing cap; a server's Retry-After is a floor."""
        cap = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        wait = rng.uniform(0, cap)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait
