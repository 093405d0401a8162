"""Integers from query strings, paths and JSON bodies, kept within what the database columns hold. Pure Python.

An id outside 1..MAX_ID cannot name a row: it filters to nothing instead of reaching the database (SQLite
raises OverflowError on it, PostgreSQL a DataError), so no such value answers 500.
"""
from __future__ import annotations

from typing import Any

MAX_ID = 2**63 - 1  # BigAutoField / bigint
MAX_POSITIVE_INT = 2**31 - 1  # PositiveIntegerField on PostgreSQL (e.g. time_spent_ms)


def id_param(value: Any) -> int | None:
    """The id a query parameter names, or None when it names none (absent, not digits, out of range)."""
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        number = int(value.strip())
    else:
        return None
    return number if 1 <= number <= MAX_ID else None
