"""Which faults a scoring task retries: those of the worker protocol (``worker_client.faults``: the network,
the broker or result backend, the platform's 5xx and 429), and the Hub when it is down or cut a download
short. Anything else (a missing model offline, a gated repo, a bad option) fails at once with its reason,
since running it again cannot help."""

from __future__ import annotations

from scoring.registry import MetricError
from worker_client import faults
from worker_client.faults import network_faults

__all__ = ["HubUnreachable", "is_transient", "network_faults", "retry_delay"]


class HubUnreachable(MetricError):
    """A model or dataset download that the network or the Hub cut short: the worker retries it."""


def _offline_mode(exc: BaseException) -> bool:
    # huggingface_hub's OfflineModeIsEnabled is a ConnectionError, but HF_HUB_OFFLINE stays set between tries
    return type(exc).__name__ == "OfflineModeIsEnabled"


def is_transient(exc: BaseException | None) -> bool:
    """Whether ``exc``, or what it was raised from (``raise … from``), is a fault that a later try can cure."""
    return faults.is_transient(exc, also=(HubUnreachable,), lasting=_offline_mode)


def retry_delay(retries: int, maximum: float = 300.0) -> float:
    """Seconds before try ``retries + 1``: 10 s doubling, capped, with full jitter; five tries span a few
    minutes of Hub or network downtime."""
    return faults.backoff(retries, base=10.0, maximum=maximum)
