"""Cells of CSV files meant for spreadsheets. Pure Python.

Text from users, imported files and LLMs can start with a character a spreadsheet reads as a formula
(``=HYPERLINK(…)``, ``+``, ``-``, ``@``, a tab or carriage return): such a cell gets a leading ``'``, which
spreadsheets show as text. Only tables meant for people get this; the dataset's own files keep text exact.
"""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """``value`` for a spreadsheet CSV: None as empty, floats exact, formula-leading text neutralised."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value
