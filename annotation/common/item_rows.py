"""Reading the rows of an items file, as rating's system outputs and the span items take them: each cell
checked (text, bidi controls, length), each row's (system, id) once. Problems are collected, named by row,
so one pass reports every bad row of a file."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from core.corpus.domain import text_cell
from core.domain import bidi


def row_cells(
    row: dict,
    columns: Iterable[str],
    *,
    where: str,
    limits: dict[str, int],
    errors: list[str],
    check: Callable[[str, str], str | None] | None = None,
) -> dict[str, str]:
    """The row's ``columns`` as text ("" for a missing or NaN cell), each checked: a text cell (``id`` may be a
    whole number), no unbalanced bidi controls, at most ``limits[column]`` characters where one is set, then
    ``check(column, value)``. A problem is appended to ``errors`` as ``where: field 'column' problem``."""
    cells = {}
    for col in columns:
        value = row.get(col)
        if value is None or (isinstance(value, float) and value != value):
            cells[col] = ""
            continue
        value, problem = text_cell(value, integer_ok=col == "id")
        problem = problem or bidi.spanning_problem(value)
        if not problem and limits.get(col) and len(value.strip()) > limits[col]:
            problem = f"is {len(value.strip())} characters long, at most {limits[col]} fit"
        if not problem and check is not None:
            problem = check(col, value)
        if problem:
            errors.append(f"{where}: field {col!r} {problem}")
        cells[col] = value
    return cells


def check_output(where: str, source: str, text: str, key: tuple[str, str], seen: set, errors: list[str]) -> None:
    """An output needs its source and its text, and its ``key`` (system, id) once in the file."""
    if not source:
        errors.append(f"{where}: field 'source' is empty")
    if not text:
        errors.append(f"{where}: field 'text' is empty")
    if key in seen:
        errors.append(f"{where}: duplicate id {key[1]!r} for system {key[0]!r}")
    seen.add(key)
