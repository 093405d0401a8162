"""Checking a scoring worker's part file before anything is written. Pure Python (no Django).

A part file is the parquet table one worker writes for one (metric, direction): columns ``direction``,
``triplet_id``, ``score`` and optionally ``num_errors``, and the run's metadata under
``scoring.runner.META_KEY``. ``read_part`` reads it and returns plain rows, or raises ``ScoringError`` naming
the file, the row and the field; ``exports.scores.services.ingest_part`` stores what it returns.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from scoring.runner import META_KEY

REQUIRED_COLUMNS = ("direction", "triplet_id", "score")


class ScoringError(Exception):
    """Scoring cannot start or a worker's output cannot be ingested; the message says why."""


@dataclass(frozen=True)
class PartRow:
    triplet_id: str
    level: int | None
    score: float


@dataclass
class Part:
    rows: list[PartRow]
    signature: dict = field(default_factory=dict)


def read_part(path: Path, *, metric: str, direction: str) -> Part:
    """Read and check the part file at ``path`` for ``metric`` and ``direction`` (a code such as en-de)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ScoringError(f"{path}: the worker reported success but the file is missing (is {path.parent} shared with the workers?)")
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"{path}: not a readable parquet file ({exc})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise ScoringError(f"{path}: missing column(s) {', '.join(missing)}")
    meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
    return check_part(path, table.to_pydict(), meta, metric=metric, direction=direction, num_rows=table.num_rows)


def check_part(path: Path, columns: dict[str, list], meta: dict, *, metric: str, direction: str, num_rows: int) -> Part:
    """The rows of a part file given as columns and metadata; refuses another metric, another direction, a
    triplet twice, or a score that is not a finite number (a missing score with its reason in the ``error``
    or ``note`` column, which LLM judges write, is left out)."""
    if meta.get("metric") != metric:
        raise ScoringError(f"{path}: holds metric {meta.get('metric')!r}, expected {metric!r}")
    levels = columns.get("num_errors") or [None] * num_rows
    # judge metrics record per segment why a score is missing (transport error, unreadable answer)
    reasons = [(e or "") + (n or "") for e, n in zip(columns.get("error") or [""] * num_rows, columns.get("note") or [""] * num_rows)]
    seen = set()
    rows = []
    for i, (d, tid, score, level) in enumerate(zip(columns["direction"], columns["triplet_id"], columns["score"], levels)):
        if d != direction:
            raise ScoringError(f"{path}: row {i} is direction {d!r}, expected {direction!r}")
        if tid in seen:
            raise ScoringError(f"{path}: row {i}: triplet_id {tid!r} appears twice")
        if score is None and reasons[i]:
            continue  # an LLM judge could not score this segment; the file says why (the next run retries it)
        if score is None or not math.isfinite(score):
            raise ScoringError(f"{path}: row {i} (triplet {tid!r}): score {score!r} is not a finite number")
        seen.add(tid)
        rows.append(PartRow(triplet_id=str(tid), level=None if level is None else int(level), score=float(score)))
    return Part(rows=rows, signature=meta.get("signature") or {})
