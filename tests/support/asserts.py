"""Assertions that cannot pass on nothing."""

from __future__ import annotations

from collections.abc import Iterable


def every(checks: Iterable) -> bool:
    """``all(checks)``, and at least one check: ``assert all(x for x in [])`` passes on an empty list, which hides
    a query or a fixture that found nothing (tests/unit/test_assert_conventions.py keeps ``assert all(`` out)."""
    seen = False
    for check in checks:
        if not check:
            return False
        seen = True
    return seen
