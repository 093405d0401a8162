"""Reading gold parallel corpora (TSV, CSV, JSONL, parquet, Hugging Face datasets). Pure Python.

Every reader validates everything before anything is written and reports *every* bad row with its line
number (1-based, the header being line 1 for TSV/CSV) and reason.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.domain import bidi
from core.domain.errors import InputErrors, Invalid

SUPPORTED_SUFFIXES = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


@dataclass(frozen=True)
class Limits:
    """What one corpus file may hold, the same for every format (#36.5); a file past one is refused with
    the limit named, before it is held whole in memory. Defaults in docs/security.md."""

    segment_chars: int = 5_000  # a source or reference cell (FLORES+ sentences stay under 1,000)
    columns: int = 200
    nesting: int = 32  # JSON brackets inside one JSONL line
    rows: int = 200_000
    parquet_bytes: int = 512 * 1024 * 1024  # uncompressed size parquet's metadata declares


DEFAULT_LIMITS = Limits()


class CorpusError(InputErrors):
    """The corpus file cannot be imported."""


class HubUnreachable(CorpusError):
    """The Hub did not answer (a network fault, a timeout, 429 or 5xx): a later try may succeed, where a
    missing dataset, config or split, or a bad row, never will."""


# Answers of the Hub that say "not now" rather than "no" (huggingface_hub retries the same ones per call).
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def _transient(exc: BaseException) -> BaseException | None:
    """The network fault or transient Hub answer behind ``exc`` (itself or what it was raised from, explicitly
    or while handling), or None. ``datasets`` wraps an unreachable Hub in ``ConnectionError`` or, where it
    fell back on its cache, ``FileNotFoundError``; the HTTP client's own faults are ``TransportError``s."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (ConnectionError, TimeoutError)):
            return seen
        if any(cls.__name__ == "TransportError" for cls in type(seen).__mro__):
            return seen
        if getattr(getattr(seen, "response", None), "status_code", None) in _TRANSIENT_STATUS:
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _without_server_paths(text: str) -> str:
    """``datasets`` names local paths in its messages (the working directory it looked in first, its cache):
    a page shows the reason, never where the server keeps its files."""
    for folder in {str(Path.cwd()), str(Path.home())}:
        text = text.replace(folder + "/", "").replace(folder, "…")
    return text


@dataclass(frozen=True)
class CorpusRow:
    external_id: str
    source: str
    reference: str
    location: str  # e.g. "corpus.tsv line 7"


@dataclass(frozen=True)
class Columns:
    id: str = "id"
    source: str = "source"
    reference: str = "reference"


def detect_format(name: str, explicit: str | None = None) -> str:
    if explicit:
        if explicit not in {"tsv", "csv", "jsonl", "parquet"}:
            raise CorpusError(name, [f"unknown format {explicit!r} (tsv, csv, jsonl, parquet)"])
        return explicit
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise CorpusError(
            name, [f"cannot tell the format from the suffix {suffix!r}; use .tsv, .csv, .jsonl or .parquet"]
        )
    return SUPPORTED_SUFFIXES[suffix]


def read_records(
    data: bytes, name: str, fmt: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> list[tuple[str, dict[str, Any]]]:
    """The raw records of a TSV/CSV/JSONL/parquet file given as bytes, each with where it was ("FILE line N")."""
    fmt = detect_format(name, fmt)
    if not data:
        raise CorpusError(name, ["the file is empty"])
    if fmt == "parquet":
        return _parquet_records(data, name, limits)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorpusError(name, [decoding_problem(data, name, exc)]) from None
    if not text.strip():
        raise CorpusError(name, ["the file is empty"])
    if fmt == "jsonl":
        return _jsonl_records(text, name, limits)
    return _delimited_records(text, name, "\t" if fmt == "tsv" else ",", limits)


def read_corpus(
    data: bytes, name: str, columns: Columns = Columns(), fmt: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> list[CorpusRow]:
    """Parse and validate a corpus file given as bytes (a path's contents or an upload)."""
    return validate_records(read_records(data, name, fmt, limits), name, columns, limits=limits)


def read_corpus_file(
    path: str | Path, columns: Columns = Columns(), fmt: str | None = None, limits: Limits = DEFAULT_LIMITS
) -> list[CorpusRow]:
    path = Path(path)
    if not path.is_file():
        raise CorpusError(str(path), ["no such file"])
    return read_corpus(path.read_bytes(), str(path), columns, fmt, limits)


_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")


def hub_id_problem(dataset: str) -> str:
    """Why ``dataset`` is not a Hub dataset id (``namespace/name``), or ''. A form takes only these: a path
    (absolute, ``../…``, a folder name) would read the server's own files (#36.4)."""
    if not _HUB_ID.fullmatch(dataset) or ".." in dataset:
        return (
            f"{dataset[:100]!r} is not a Hub dataset id: namespace/name, letters, digits, '-', '_' and '.' "
            "(not first); local dataset directories are imported with the import_corpus command"
        )
    return ""


def read_hf_dataset(
    dataset: str,
    config: str | None,
    split: str,
    columns: Columns = Columns(),
    *,
    hub_only: bool = False,
    timeout: float | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[CorpusRow]:
    """Load a dataset through `datasets`: a Hub id, or (the command line only, ``hub_only`` off) a local
    dataset directory. ``timeout``: seconds for each Hub call, so an unreachable Hub fails soon.
    ``HubUnreachable`` when the Hub did not answer (worth a later try), ``CorpusError`` otherwise."""
    name = f"{dataset}" + (f" ({config})" if config else "") + f" split {split}"
    if hub_only and hub_id_problem(dataset):
        raise CorpusError(name, [hub_id_problem(dataset)])
    import datasets

    if timeout is not None:  # each Hub call's connect/read timeout (huggingface_hub reads its constants per call)
        import huggingface_hub.constants as hub

        hub.HF_HUB_ETAG_TIMEOUT = hub.HF_HUB_DOWNLOAD_TIMEOUT = int(max(1, timeout))

    try:
        # hf://datasets/… : the Hub only, never a folder of the server's working directory that happens to be
        # named like the id (``core/corpus`` is one)
        ds = datasets.load_dataset(f"hf://datasets/{dataset}" if hub_only else dataset, config, split=split)
    except Exception as exc:  # datasets raises many types; report them uniformly
        fault = _transient(exc)
        if fault is not None:
            reason = f"the Hub did not answer: {type(fault).__name__}: {fault}"
            raise HubUnreachable(name, [_without_server_paths(reason)]) from None
        reason = f"cannot load dataset: {type(exc).__name__}: {exc}"
        raise CorpusError(name, [_without_server_paths(reason)]) from None
    if ds.num_rows > limits.rows:
        raise CorpusError(name, [f"{ds.num_rows} rows, more than the {limits.rows} allowed"])
    records = [(f"row {i}", dict(row)) for i, row in enumerate(ds)]
    return validate_records(records, name, columns, present=set(ds.column_names), limits=limits)


def byte_order_mark_problem(head: bytes, name: str) -> str | None:
    """What a file is instead of UTF-8 when its first bytes (a byte order mark) tell: UTF-16 or UTF-32."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return f"{name}: the file is UTF-16 or UTF-32 (it starts with that byte order mark); save it as UTF-8"
    return None


def decoding_problem(data: bytes, name: str, exc: UnicodeDecodeError) -> str:
    """Where a file stops being UTF-8 (its line), and what it is instead when its BOM tells (UTF-16/32)."""
    bom = byte_order_mark_problem(data, name)
    if bom:
        return bom
    line = data.count(b"\n", 0, exc.start) + 1
    return f"{name} line {line}: not valid UTF-8 at byte {exc.start}: {exc.reason}"


# ---- readers -> (location, record) -------------------------------------------------------------------


def _delimited_records(text: str, name: str, delimiter: str, limits: Limits) -> list[tuple[str, dict[str, Any]]]:
    # QUOTE_NONE for TSV: corpus text contains quotes that are data, not quoting.
    quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting, strict=True)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise CorpusError(name, [f"line 1: cannot read the header ({exc})"]) from None
    if len(header) > limits.columns:
        raise CorpusError(name, [f"{name} line 1: {len(header)} columns, more than the {limits.columns} allowed"])
    header = [h.strip() for h in header]
    twice = _repeated(header)
    if twice:  # zip() would keep the last one's cell without a word
        raise CorpusError(name, [f"{name} line 1: column {h!r} appears twice in the header" for h in twice])
    records: list[tuple[str, dict[str, Any]]] = []
    errors: list[str] = []
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                errors.append(f"{name} line {line}: {len(row)} fields, the header has {len(header)}")
                continue
            if len(records) == limits.rows:
                raise CorpusError(name, [f"{name} line {line}: more than {limits.rows} rows"])
            records.append((f"{name} line {line}", dict(zip(header, row))))
    except csv.Error as exc:
        errors.append(f"{name} line {reader.line_num}: {exc}")
    if errors:
        raise CorpusError(name, errors)
    if not records:
        raise CorpusError(name, ["no data rows after the header"])
    return records


class _DuplicateKey(Invalid, ValueError):
    code = "duplicate_key"


def _repeated(names: list[str]) -> list[str]:
    """The non-empty names that occur more than once, in one pass (a set, not ``list.count`` per name)."""
    seen: set[str] = set()
    twice: set[str] = set()
    for item in names:
        if item in seen:
            twice.add(item)
        seen.add(item)
    return sorted(item for item in twice if item)


def _object_without_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    twice = _repeated([k for k, _ in pairs])
    if twice:  # json.loads would keep the last value without a word
        raise _DuplicateKey(", ".join(f"key {k!r} appears twice" for k in twice))
    return dict(pairs)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def nesting_depth(line: str) -> int:
    """How deep JSON brackets nest in ``line`` (strings skipped), in one linear pass: a line nested past the
    limit is refused before the parser recurses into it."""
    depth = deepest = 0
    for character in _JSON_STRING.sub("", line):
        if character in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "]}":
            depth -= 1
    return deepest


def _jsonl_records(text: str, name: str, limits: Limits) -> list[tuple[str, dict[str, Any]]]:
    records, errors = [], []
    # split at "\n" only: str.splitlines() also breaks at U+2028, U+2029, U+0085 and form feeds, which JSON
    # strings may hold raw (json.dumps(ensure_ascii=False) writes them so)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(records) == limits.rows:
            raise CorpusError(name, [f"{name} line {number}: more than {limits.rows} rows"])
        depth = nesting_depth(line)
        if depth > limits.nesting:
            errors.append(f"{name} line {number}: JSON nested {depth} deep, more than the {limits.nesting} allowed")
            continue
        try:
            value = json.loads(line, object_pairs_hook=_object_without_duplicate_keys)
        except json.JSONDecodeError as exc:
            errors.append(f"{name} line {number}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:  # the scan above bounds it; kept so no nesting ever answers 500
            errors.append(f"{name} line {number}: JSON nested too deeply")
            continue
        except _DuplicateKey as exc:
            errors.append(f"{name} line {number}: {exc}")
            continue
        if not isinstance(value, dict):
            errors.append(f"{name} line {number}: expected a JSON object, got {type(value).__name__}")
            continue
        if len(value) > limits.columns:
            errors.append(f"{name} line {number}: {len(value)} keys, more than the {limits.columns} allowed")
            continue
        records.append((f"{name} line {number}", value))
    if errors:
        raise CorpusError(name, errors)
    if not records:
        raise CorpusError(name, ["the file is empty"])
    return records


def parquet_footer_problem(meta, limits: Limits) -> str:
    """Why a parquet file's footer (``pyarrow.parquet.FileMetaData``) puts it past ``limits``, or "": rows,
    columns and declared size are refused before any column is read. Every parquet upload asks here."""
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if meta.num_rows > limits.rows:
        return f"{meta.num_rows} rows, more than the {limits.rows} allowed"
    if meta.num_columns > limits.columns:
        return f"{meta.num_columns} columns, more than the {limits.columns} allowed"
    if size > limits.parquet_bytes:
        return f"{size} bytes uncompressed, more than the {limits.parquet_bytes} allowed"
    return ""


def text_length_problem(value: str, limits: Limits) -> str:
    """Why a text cell is too long, or "": the one text limit of every upload (a segment, a reference, a
    system output, a candidate; ``CORPUS_MAX_SEGMENT_CHARS``)."""
    if len(value) > limits.segment_chars:
        return f"has {len(value)} characters, more than the {limits.segment_chars} allowed"
    return ""


def _parquet_records(data: bytes, name: str, limits: Limits) -> list[tuple[str, dict[str, Any]]]:
    import pyarrow.parquet as pq

    try:  # the footer first: rows, columns and size are refused before any column is read
        meta = pq.ParquetFile(io.BytesIO(data)).metadata
    except Exception as exc:
        raise CorpusError(name, [f"not a readable parquet file: {exc}"]) from None
    problem = parquet_footer_problem(meta, limits)
    if problem:
        raise CorpusError(name, [problem])
    try:
        table = pq.read_table(io.BytesIO(data))
    except Exception as exc:
        raise CorpusError(name, [f"not a readable parquet file: {exc}"]) from None
    if table.num_rows == 0:
        raise CorpusError(name, ["the file has no rows"])
    return [(f"{name} row {i + 1}", row) for i, row in enumerate(table.to_pylist())]


# ---- validation ----------------------------------------------------------------------------------


def type_name(value: Any) -> str:
    """How a JSON/parquet reader calls a value's type, for error messages."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return type(value).__name__


# C0 controls but tab, line feed and carriage return, and DEL: no corpus text holds them (an escape sequence
# would reach terminals and pages); NUL and lone surrogates (JSON's "\ud800") cannot even be stored.
_CONTROLS = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATES = re.compile("[\ud800-\udfff]")


def character_problem(text: str) -> str:
    """'' when ``text`` holds only characters an imported cell may hold, else the problem for an error message."""
    if "\x00" in text:
        return "contains a NUL character"
    found = sorted(set(_SURROGATES.findall(text)))
    if found:
        return f"contains lone surrogate(s) {', '.join(f'U+{ord(c):04X}' for c in found)} (not valid Unicode)"
    found = sorted(set(_CONTROLS.findall(text)))
    if found:
        return f"contains control character(s) {', '.join(f'U+{ord(c):04X}' for c in found)}"
    return ""


def blank(text: str) -> bool:
    """Whether ``text`` shows nothing: whitespace and invisible format characters only (a zero-width space,
    a byte order mark, bidirectional marks) are an empty cell too."""
    return not any(unicodedata.category(c) not in _INVISIBLE for c in text.strip())


_INVISIBLE = {"Zs", "Zl", "Zp", "Cc", "Cf"}


def text_cell(value: Any, *, integer_ok: bool = False) -> tuple[str, str]:
    """A cell as text, or a problem: JSONL/parquet values that are not strings are never stringified
    (``["a"]``, ``{"x": 1}``, ``true``, ``1.5`` would become text no one wrote), and text with characters
    no cell may hold (``character_problem``) is refused. ``integer_ok``: an id column may hold whole
    numbers (a parquet int64 line index), never booleans or floats."""
    if isinstance(value, str):
        problem = character_problem(value)
        return ("", problem) if problem else (value, "")
    if integer_ok and isinstance(value, int) and not isinstance(value, bool):
        return str(value), ""
    wanted = "a string or a whole number" if integer_ok else "a string"
    return "", f"must be {wanted}, got {type_name(value)} ({_short(value)})"


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def validate_records(
    records: list[tuple[str, dict[str, Any]]],
    name: str,
    columns: Columns,
    present: set[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> list[CorpusRow]:
    wanted = {"id": columns.id, "source": columns.source, "reference": columns.reference}
    if present is None:
        present = set()
        for _, record in records:
            present.update(record.keys())
    missing = [f"{col!r} (the {role} column)" for role, col in wanted.items() if col not in present]
    if missing:
        found = ", ".join(sorted(map(repr, present))) or "none"
        raise CorpusError(name, [f"missing column {m}; columns found: {found}" for m in missing])
    rows: list[CorpusRow] = []
    errors: list[str] = []
    seen: dict[str, tuple[str, str, str]] = {}
    for location, record in records:
        values = {}
        for role, col in wanted.items():
            value = record.get(col)
            if value is None or (isinstance(value, float) and value != value):
                errors.append(f"{location}: empty {col!r}")
                continue
            value, problem = text_cell(value, integer_ok=role == "id")
            if problem:
                errors.append(f"{location}: {col!r} {problem}")
                continue
            if role != "id":
                value = value.strip()
            if blank(value):
                errors.append(f"{location}: empty {col!r}")
                continue
            problem = text_length_problem(value, limits)
            if problem:
                errors.append(f"{location}: {col!r} {problem}")
                continue
            problem = bidi.spanning_problem(value)
            if problem:
                errors.append(f"{location}: {col!r} {problem}")
                continue
            values[role] = value.strip() if role == "id" else value
        if len(values) != 3:
            continue
        previous = seen.get(values["id"])
        if previous is not None:
            if (previous[1], previous[2]) != (values["source"], values["reference"]):
                errors.append(f"{location}: duplicate id {values['id']!r} with different text (first at {previous[0]})")
            continue  # an exact repeat within a file is harmless
        seen[values["id"]] = (location, values["source"], values["reference"])
        rows.append(CorpusRow(values["id"], values["source"], values["reference"], location))
    if errors:
        raise CorpusError(name, errors)
    return rows
