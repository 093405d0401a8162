"""Agreement tables as CSV, JSON and display cells. Pure Python (no Django).

The dashboard downloads and ``manage.py agreement`` both serialise through here, so a number is written
the same way everywhere: JSON keeps full float precision and ``null`` for undefined; CSV writes
``repr``-exact floats and an empty cell for undefined."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence

from core.domain.spreadsheet import safe_cell

UNDEFINED = "undefined"


def columns(rows: Sequence[dict]) -> list[str]:
    """Column names in first-seen order over all rows."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


_csv_cell = safe_cell  # names come from users and imported files: never run as formulas


def to_csv(rows: Sequence[dict], header: Iterable[str] | None = None) -> str:
    buffer = io.StringIO()
    names = list(header) if header is not None else columns(rows)
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_csv_cell(row.get(name)) for name in names])
    return buffer.getvalue()


def report_to_csv(report: dict[str, list[dict]]) -> str:
    """All tables in one CSV stream: each preceded by a ``# table: NAME`` line and followed by a blank line."""
    return "".join(f"# table: {name}\n{to_csv(rows)}\n" for name, rows in report.items())


def _json_safe(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json(payload: object) -> str:
    def clean(obj):
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [clean(v) for v in obj]
        return _json_safe(obj)

    return json.dumps(clean(payload), indent=2, ensure_ascii=False, allow_nan=False)


def display_cell(value: object) -> str:
    if value is None:
        return UNDEFINED
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def display(rows: Sequence[dict]) -> tuple[list[str], list[list[str]]]:
    """(headers, cells) for an HTML table: floats to 3 decimals, undefined spelled out."""
    names = columns(rows)
    return [n.replace("_", " ") for n in names], [[display_cell(row.get(n)) for n in names] for row in rows]
