"""Concurrency, requests-per-minute budget and retry policy for remote LLM calls. Pure Python (asyncio).

Transient faults (HTTP 429, 5xx, timeouts, dropped connections, malformed bodies) are retried with
exponential backoff and full jitter, honouring a server's Retry-After; anything else fails at once with
its reason.
"""

from __future__ import annotations

import asyncio
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
