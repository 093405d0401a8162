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
        async with self._lock:
            now = loop.time()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


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
