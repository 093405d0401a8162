"""Reading and checking a scoring worker's part file. Pure Python (no Django).

A part file is the parquet table one worker writes for one (metric, direction): columns ``direction``,
``triplet_id``, ``score`` and optionally ``num_errors`` (and, for LLM judges, ``error``/``note``: why a
score is missing), for metrics that mark error spans a JSON column of them (``SPAN_COLUMNS``), and the
run's metadata under ``scoring.runner.META_KEY``. ``open_part`` checks the file
and its metadata; ``Part.batches()`` then streams the rows ``INGEST_BATCH`` at a time as plain
``PartRow``s, raising ``ScoringError`` (naming the file, the row and the field) at the first bad row, so
``exports.scores.services.part_ingest`` can write batch by batch inside one transaction and a bad row
anywhere leaves the previous scores in place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.domain.errors import Invalid
from scoring.api import META_KEY

REQUIRED_COLUMNS = ("direction", "triplet_id", "score")
INGEST_BATCH = 10_000  # score rows read from the part file and written at a time
MAX_LEVEL = 32767  # MetricScore.level: a PositiveSmallIntegerField
MAX_SPANS = 1000  # error spans kept per row; a row with more is refused (bounded storage per score)


def _located_errors(item: dict) -> tuple[int, int] | None:
    # GEMBA-MQM (scoring.metrics.gemba): each error's span text located in the MT; not found: no offsets
    return (item.get("start"), item.get("end")) if item.get("found") else None


def _xcomet_spans(item: dict) -> tuple[int, int] | None:
    # xCOMET (unbabel-comet's metadata.error_spans): character offsets in the MT
    return item.get("start"), item.get("end")


# Part file column → how one of its entries gives a [start, end) character span in the scored translation.
SPAN_COLUMNS = {"errors": _located_errors, "error_spans": _xcomet_spans}


class ScoringError(Invalid):
    """Scoring cannot start or a worker's output cannot be ingested; the message says why."""

    code = "scoring_refused"


@dataclass(frozen=True)
class PartRow:
    triplet_id: str
    level: int | None
    score: float
    spans: list[list[int]] | None = None  # [[start, end], …] in the scored translation; None: none marked


@dataclass
class Part:
    path: Path
    direction_code: str
    signature: dict
    parquet: Any = field(repr=False)
    columns: list[str] = field(default_factory=list)
    id_length: int = 0  # the most characters a triplet id may have (0: no limit)

    def batches(self, batch_size: int | None = None) -> Iterator[list[PartRow]]:
        """The rows, checked, ``batch_size`` at a time; a row the judge could not score (missing score with
        its reason in ``error`` or ``note``) is left out. Refuses another direction, a triplet twice, a
        score that is not a finite number, a triplet id that is not a string (or too long to store), or a
        number of errors that is not a whole number from 0 to ``MAX_LEVEL``."""
        import pyarrow as pa

        path, seen, i = (
            self.path,
            set(),
            1,
        )  # row numbers count from 1, as the corpus and XQ-MEval parquet readers count theirs
        batch_size = batch_size or INGEST_BATCH
        try:
            for batch in self.parquet.iter_batches(batch_size=batch_size, columns=self.columns):
                cols = batch.to_pydict()
                levels = cols.get("num_errors") or [None] * batch.num_rows
                blank = [""] * batch.num_rows
                reasons = [(e or "") + (n or "") for e, n in zip(cols.get("error") or blank, cols.get("note") or blank)]
                span_column = next((c for c in SPAN_COLUMNS if c in cols), None)
                marked = cols[span_column] if span_column else [None] * batch.num_rows
                rows = []
                rows_in = zip(cols["direction"], cols["triplet_id"], cols["score"], levels, reasons, marked)
                for d, tid, score, level, reason, spans in rows_in:
                    if d != self.direction_code:
                        raise ScoringError(f"{path}: row {i} is direction {d!r}, expected {self.direction_code!r}")
                    if not isinstance(tid, str) or not tid.strip():
                        raise ScoringError(f"{path}: row {i}: triplet_id {tid!r} is not a non-empty string")
                    if self.id_length and len(tid) > self.id_length:
                        raise ScoringError(
                            f"{path}: row {i}: triplet_id {tid[:40]!r}… is {len(tid)} characters long, at most {self.id_length} fit"
                        )
                    if tid in seen:
                        raise ScoringError(f"{path}: row {i}: triplet_id {tid!r} appears twice")
                    if score is None and reason:
                        i += 1
                        continue  # an LLM judge could not score this segment; the file says why (the next run retries it)
                    if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                        raise ScoringError(f"{path}: row {i} (triplet {tid!r}): score {score!r} is not a finite number")
                    if level is not None and not _is_level(level):
                        raise ScoringError(
                            f"{path}: row {i} (triplet {tid!r}): num_errors {level!r} is not a whole number from 0 to {MAX_LEVEL}"
                        )
                    seen.add(tid)
                    if span_column:
                        where = f"{path}: row {i} (triplet {tid!r}): {span_column}"
                        spans = _spans(spans, SPAN_COLUMNS[span_column], where)
                    rows.append(
                        PartRow(
                            triplet_id=str(tid),
                            level=None if level is None else int(level),
                            score=float(score),
                            spans=spans,
                        )
                    )
                    i += 1
                yield rows
        except (pa.ArrowException, OSError) as exc:
            raise ScoringError(f"{path}: not a readable parquet file ({exc})") from None


def _spans(value: Any, read, where: str) -> list[list[int]] | None:
    """A row's span column (a JSON list of objects, as scoring.runner writes extras) → [[start, end], …]."""
    if value is None:
        return None
    try:
        items = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ScoringError(f"{where}: not JSON") from None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ScoringError(f"{where}: not a list of objects")
    if len(items) > MAX_SPANS:
        raise ScoringError(f"{where}: {len(items)} spans, at most {MAX_SPANS}")
    out = []
    for n, item in enumerate(items, 1):
        span = read(item)
        if span is None:
            continue
        start, end = span
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)) or not 0 <= start <= end:
            raise ScoringError(f"{where}: span {n} has start {start!r} and end {end!r}, not offsets 0 <= start <= end")
        out.append([start, end])
    return out


def _is_level(value: Any) -> bool:
    """A number of errors the level column can hold (a whole float such as 3.0 counts: pandas writes one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (isinstance(value, int) or value.is_integer()) and 0 <= value <= MAX_LEVEL


def open_part(path: Path, *, metric: str, direction_code: str, id_length: int = 0) -> Part:
    """Open the part file at ``path`` for ``metric`` and ``direction_code`` (a code such as en-de) and check its
    columns and metadata; the rows are checked as ``Part.batches()`` reads them (``id_length``: the most
    characters a triplet id may have)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.is_file():
        raise ScoringError(
            f"{path}: the worker reported success but the file is missing (is {path.parent} shared with the workers?)"
        )
    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise ScoringError(f"{path}: not a readable parquet file ({exc})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
    if missing:
        raise ScoringError(f"{path}: missing column(s) {', '.join(missing)}")
    try:
        meta = json.loads((schema.metadata or {}).get(META_KEY, b"{}"))
    except ValueError:  # (JSONDecodeError, or bytes that are not UTF-8)
        meta = None
    if not isinstance(meta, dict):
        raise ScoringError(f"{path}: metadata {META_KEY!r} is not a JSON object")
    if meta.get("metric") != metric:
        raise ScoringError(f"{path}: holds metric {meta.get('metric')!r}, expected {metric!r}")
    columns = [*REQUIRED_COLUMNS, *(c for c in ("num_errors", "error", "note", *SPAN_COLUMNS) if c in schema.names)]
    return Part(
        path=path,
        direction_code=direction_code,
        signature=meta.get("signature") or {},
        parquet=parquet,
        columns=columns,
        id_length=id_length,
    )


# ---- Workers without a shared file system (exports.workers.api) ----------------------------------------


class PartRefused(ScoringError):
    """An uploaded part that does not match what it declares; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def check_part_identity(path: Path, *, metric: str, direction_code: str, versions: set[str]) -> None:
    """Refuse (``PartRefused``) an uploaded part whose metadata or rows belong to another metric, direction
    or release than the upload declares. Reads the footer and the ``direction`` column only; the rows are
    checked in full by the ingest (``open_part``/``Part.batches``)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        meta = json.loads((schema.metadata or {}).get(META_KEY, b"{}"))
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise PartRefused("body", f"not a readable part file ({exc})") from None
    if not isinstance(meta, dict) or "direction" not in schema.names:
        raise PartRefused(
            "body", f"not a scoring part file (metadata {META_KEY.decode()!r} or column 'direction' missing)"
        )
    if meta.get("metric") != metric:
        raise PartRefused("metric", f"the part holds metric {meta.get('metric')!r}, the upload declares {metric!r}")
    held = (meta.get("release") or {}).get("version")
    if held is not None and str(held) not in versions:
        raise PartRefused(
            "release",
            f"the part was scored on release version {held!r}, the upload declares {' or '.join(sorted(versions))}",
        )
    found = [
        d for d in pc.unique(parquet.read(columns=["direction"]).column("direction")).to_pylist() if d != direction_code
    ]
    if found:
        raise PartRefused("direction", f"the part holds direction {found[0]!r}, the upload declares {direction_code!r}")


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The single byte range ``[start, end]`` (inclusive) that a ``Range`` header asks of a ``size``-byte
    representation (RFC 9110 §14.1.2), or None to send it whole (no header, another unit, several ranges,
    or one that does not parse: a server may ignore a Range it does not support). ``ValueError`` when the
    range cannot be satisfied (416)."""
    if not header or not header.strip().lower().startswith("bytes="):
        return None
    spec = header.split("=", 1)[1].strip()
    if "," in spec:
        return None
    first, sep, last = spec.partition("-")
    first, last = first.strip(), last.strip()
    if not sep or not (first.isdigit() or first == "") or not (last.isdigit() or last == "") or first == last == "":
        return None
    if first == "":  # suffix: the last N bytes
        n = int(last)
        if n == 0 or size == 0:
            raise ValueError("unsatisfiable range")
        return max(0, size - n), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if last and int(last) < start:
        return None  # invalid range-spec: ignored
    if start >= size:
        raise ValueError("unsatisfiable range")
    return start, end
