"""Which faults a worker's task tries again, and how long it waits: the network, the broker or result
backend, a stream cut short, and the platform's 5xx and 429 are worth another try; a refusal (4xx, a bad
file, a bad option) fails at once with its reason, since running it again cannot help."""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from functools import lru_cache

# (module, names): the client libraries a worker talks through; those not installed are skipped.
_NETWORK_FAULTS = (
    ("builtins", ("ConnectionError", "TimeoutError")),
    ("requests.exceptions", ("ConnectionError", "Timeout", "ChunkedEncodingError")),
    ("httpx", ("TransportError",)),
    ("redis.exceptions", ("ConnectionError", "TimeoutError")),
    ("kombu.exceptions", ("OperationalError",)),
)


@lru_cache(maxsize=1)
def network_faults() -> tuple[type[BaseException], ...]:
    kinds = []
    for module, names in _NETWORK_FAULTS:
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        kinds += [getattr(found, name) for name in names if hasattr(found, name)]
    return tuple(kinds)


def _never(exc: BaseException) -> bool:
    return False


def is_transient(
    exc: BaseException | None,
    *,
    also: tuple[type[BaseException], ...] = (),
    lasting: Callable[[BaseException], bool] = _never,
) -> bool:
    """Whether ``exc``, or what it was raised from (``raise … from``), is a fault a later try can cure.
    ``also``: a caller's own kinds of transient fault; ``lasting``: faults that look like the network's
    but stay (a caller's offline mode), checked first."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if also and isinstance(exc, also):
            return True
        if lasting(exc):
            return False
        if isinstance(exc, network_faults()):
            return True
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(status, int):
            return status >= 500 or status == 429
        exc = exc.__cause__
    return False


def backoff(retries: int, *, base: float, maximum: float) -> float:
    """Seconds before try ``retries + 1``: ``base`` doubling, capped at ``maximum``, with full jitter
    (workers that failed together do not come back together)."""
    return random.uniform(0, min(maximum, base * 2.0**retries))
