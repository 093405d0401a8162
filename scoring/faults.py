"""Which faults a scoring task retries: the network, the broker or result backend, and the Hub when it is
down or cut a download short. Anything else (a missing model offline, a gated repo, a bad option) fails
at once with its reason, since running it again cannot help."""

from __future__ import annotations

import importlib
import random
from functools import lru_cache

from scoring.registry import MetricError

# (module, names): the client libraries a worker talks through; those not installed are skipped.
_NETWORK_FAULTS = (
    ("builtins", ("ConnectionError", "TimeoutError")),
    ("requests.exceptions", ("ConnectionError", "Timeout", "ChunkedEncodingError")),
    ("httpx", ("TransportError",)),
    ("redis.exceptions", ("ConnectionError", "TimeoutError")),
    ("kombu.exceptions", ("OperationalError",)),
)


class HubUnreachable(MetricError):
    """A model or dataset download that the network or the Hub cut short: the worker retries it."""


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


def _offline_mode(exc: BaseException) -> bool:
    # huggingface_hub's OfflineModeIsEnabled is a ConnectionError, but HF_HUB_OFFLINE stays set between tries
    return type(exc).__name__ == "OfflineModeIsEnabled"


def is_transient(exc: BaseException | None) -> bool:
    """Whether ``exc``, or what it was raised from (``raise … from``), is a fault that a later try can cure."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, HubUnreachable):
            return True
        if _offline_mode(exc):
            return False
        if isinstance(exc, network_faults()):
            return True
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(status, int):
            return status >= 500 or status == 429
        exc = exc.__cause__
    return False


def retry_delay(retries: int, maximum: float = 300.0) -> float:
    """Seconds before try ``retries + 1``: 10 s doubling, capped, with full jitter (workers that failed
    together do not come back together); five tries span a few minutes of Hub or network downtime."""
    return random.uniform(0, min(maximum, 10.0 * 2.0**retries))
