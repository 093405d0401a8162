"""Integers from query strings, paths and JSON bodies, kept within what the database columns hold. Pure Python.

An id outside 1..MAX_ID cannot name a row: it filters to nothing instead of reaching the database (SQLite
raises OverflowError on it, PostgreSQL a DataError), so no such value answers 500.

``positive_int``, ``non_negative_number`` and ``positive_number`` are argparse ``type=`` checks for the
management commands' numeric options: a value out of range stops the command before it does anything, with
argparse's message naming the option (``argument --batch-size: must be at least 1, got 0``).
"""

from __future__ import annotations

import argparse
import math
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


def positive_int(text: str) -> int:
    """A whole number from 1 to MAX_ID (sizes, counts, run and release ids)."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= number <= MAX_ID:
        raise argparse.ArgumentTypeError(
            f"must be at least 1{'' if number < 1 else f' and at most {MAX_ID}'}, got {text}"
        )
    return number


def _finite(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(number):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return number


def non_negative_number(text: str) -> float:
    """A finite number >= 0 (seconds to wait, where 0 means no limit)."""
    number = _finite(text)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return number


def positive_number(text: str) -> float:
    """A finite number > 0 (budgets, rates, timeouts)."""
    number = _finite(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return number
