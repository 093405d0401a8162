"""Reading the released XQ-MEval candidate files and decisions. Pure Python (no Django).

Files: ``en-{lang}-{ErrorType}.parquet`` with columns language, count_id, segment_id, error_type,
error_position, src, ref, mt (``<v>…</v>`` marks the edit), reject; and ``decisions.csv`` with language,
error_type, count_id, segment_id, error_position, decision. Every problem is collected with its file and
row. Files are grouped by target language (``plan_files``) so an import reads, checks and writes one
language at a time: its memory is one language's files, not the release's.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from core.corpus.domain import (
    DEFAULT_LIMITS,
    Limits,
    blank,
    byte_order_mark_problem,
    parquet_footer_problem,
    text_cell,
    text_length_problem,
    type_name,
)
from core.domain import bidi
from core.domain.errors import InputErrors
from core.domain.languages import LANGUAGE_CODE_PATTERN, is_known
from core.domain.params import MAX_ID
from core.domain.records import fields_of
from core.domain.units import Edit, MarkupError, diff_edit, parse_marked, strip_markup
from core.processes import process_alive

ERROR_TYPES = ("Addition", "Mistranslation", "Omission", "Untranslated")
POSITIONS = ("head", "end")
FILE_RE = re.compile(
    rf"^(?P<src>{LANGUAGE_CODE_PATTERN})-(?P<tgt>{LANGUAGE_CODE_PATTERN})-(?P<type>[A-Za-z]+)\.parquet$"
)
CANDIDATE_COLUMNS = ("language", "count_id", "segment_id", "error_type", "error_position", "src", "ref", "mt")
INTEGER_COLUMNS = ("count_id", "segment_id")
GOLD_COLUMNS = ("src", "ref")  # the candidate (mt) is LLM text: flagged by the bidi_controls check, not refused
DECISION_COLUMNS = ("language", "error_type", "count_id", "segment_id", "error_position", "decision")
DECISION_VALUES = {"accepted": "accept", "rejected": "reject"}
_TAG_RE = re.compile(r"</?v>")


class XQMEvalFormatError(InputErrors):
    def __init__(self, errors: list[str]):
        super().__init__("", errors)


@dataclass(frozen=True)
class XQCandidate:
    direction_code: str
    language: str
    error_type: str
    count_id: int
    segment_id: str
    position: str
    src: str
    ref: str
    text: str  # candidate without markup
    edit: Edit
    regions: int
    outside_ok: bool
    outside_detail: str
    marked: str
    location: str
    reference_mismatch: str = ""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.language, self.error_type, self.count_id)


@dataclass
class XQRelease:
    candidates: list[XQCandidate] = field(default_factory=list)
    gold: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (direction, segment_id) -> (src, ref)
    decisions: dict[tuple[str, str, int], str] = field(default_factory=dict)  # candidate key -> accept|reject


@dataclass
class FileGroup:
    """The candidate files of one target language: the unit the import reads, checks and writes at a time
    (a count_id is unique per language and error type, and a gold pair is voted on by a direction's files)."""

    language: str
    files: list[tuple[str, str, str, object]] = field(
        default_factory=list
    )  # (name, direction, error type, bytes or path)
    limits: Limits = DEFAULT_LIMITS  # every upload's limits (the settings' CORPUS_LIMITS), per file (#48.3)


@dataclass
class GroupRead:
    language: str
    candidates: list[XQCandidate] = field(default_factory=list)
    gold: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    checks: list[tuple[dict, list[str]]] = field(default_factory=list)  # per candidate, when checked


@dataclass(frozen=True)
class DecisionRow:
    segment_id: str
    position: str
    decision: str  # accept | reject
    location: str


def plan_files(files: list[tuple[str, object]], limits: Limits = DEFAULT_LIMITS) -> tuple[list[FileGroup], list[str]]:
    """Group candidate files (name, bytes or path) by target language, from their names alone (nothing is
    read yet); names that do not follow ``en-{lang}-{ErrorType}.parquet`` are errors."""
    errors: list[str] = []
    groups: dict[str, FileGroup] = {}
    if not files:
        return [], ["no candidate files (expected en-{lang}-{ErrorType}.parquet)"]
    for name, data in sorted(files, key=lambda f: f[0]):
        match = FILE_RE.match(name.rsplit("/", 1)[-1])
        if not match:
            errors.append(f"{name}: file name is not en-{{lang}}-{{ErrorType}}.parquet")
            continue
        src_lang, lang, etype = match["src"], match["tgt"], match["type"]
        if etype not in ERROR_TYPES:
            errors.append(f"{name}: unknown error type {etype!r} (expected one of {', '.join(ERROR_TYPES)})")
            continue
        if not is_known(lang) or not is_known(src_lang):
            errors.append(f"{name}: unknown direction {src_lang}-{lang}")
            continue
        groups.setdefault(lang, FileGroup(lang, limits=limits)).files.append((name, f"{src_lang}-{lang}", etype, data))
    return [groups[lang] for lang in sorted(groups)], errors


def count_rows(group: FileGroup) -> int:
    """Rows in the group's files, from the parquet footers (for a progress total; 0 for an unreadable file)."""
    import pyarrow.parquet as pq

    n = 0
    for _, _, _, data in group.files:
        try:
            n += pq.read_metadata(data if not isinstance(data, (bytes, bytearray)) else io.BytesIO(data)).num_rows
        except Exception:
            pass
    return n


def _candidate_table(data, limits: Limits):
    """(the table, None) of one candidate file (its content, or a path read now), or (None, the problem)."""
    import pyarrow.parquet as pq

    if not isinstance(data, (bytes, bytearray)):
        data = data.read_bytes()  # a path: read now, one language's files at a time
    if not data:
        return None, "the file is empty"
    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        too_much = parquet_footer_problem(parquet.metadata, limits)  # before any column is read
        table = None if too_much else parquet.read()  # (read_table would import pyarrow.dataset and pandas)
    except Exception as exc:
        return None, f"not a readable parquet file ({exc})"
    if too_much:
        return None, too_much
    missing = [c for c in CANDIDATE_COLUMNS if c not in table.column_names]
    if missing:
        return None, f"missing column(s) {', '.join(missing)}; found {', '.join(table.column_names)}"
    if table.num_rows == 0:
        return None, "no rows"
    return table, None


def _cell_problems(row: dict, limits: Limits) -> list[str]:
    """What is wrong with the cells of one candidate row, each named by its column."""
    problems = []
    for col in CANDIDATE_COLUMNS:
        value = row[col]
        if value is None or (isinstance(value, str) and blank(value)):
            problems.append(f"empty {col!r}")
        elif col in INTEGER_COLUMNS:
            if not (isinstance(value, int) and not isinstance(value, bool)) and not (
                isinstance(value, str) and value.strip().isdigit()
            ):
                problems.append(f"{col!r} must be a whole number, got {type_name(value)} ({value!r})")
            elif not (isinstance(value, int) or value.strip().isascii()) or not 0 <= int(value) <= MAX_ID:
                # it becomes an id column's text: a bigint's digits fit, a longer number could not be stored
                problems.append(f"{col!r} {str(value)[:40]!r} is not a whole number from 0 to {MAX_ID}")
        elif text_cell(value)[1]:  # not a string, or characters no cell may hold (NUL, controls)
            problems.append(f"{col!r} {text_cell(value)[1]}")
        elif text_length_problem(value, limits):  # src, ref, mt: the limit of every upload's texts
            problems.append(f"{col!r} {text_length_problem(value, limits)}")
        elif col in GOLD_COLUMNS and bidi.spanning_problem(value):
            problems.append(f"{col!r} {bidi.spanning_problem(value)}")
    return problems


def _row_identity(row: dict, lang: str, etype: str) -> tuple[str, int, str]:
    """(problem, count id, segment id) of a row of the file of ``lang`` and ``etype``: the problem empty when
    the row is of that file and names its candidate."""
    if row["language"] != lang:
        return f"language {row['language']!r} does not match the file's {lang!r}", 0, ""
    if row["error_type"] != etype:
        return f"error_type {row['error_type']!r} does not match the file's {etype!r}", 0, ""
    if row["error_position"] not in POSITIONS:
        return f"error_position {row['error_position']!r} is not head or end", 0, ""
    try:
        return "", int(row["count_id"]), str(int(row["segment_id"]))
    except (TypeError, ValueError):
        return "count_id and segment_id must be integers", 0, ""


def _agreed_gold(rows: list[tuple], errors: list[str]) -> dict[tuple[str, str], tuple[str, str]]:
    """(direction, segment id) -> the (src, ref) most of the rows give; a tie is a problem, in ``errors``."""
    gold = {}
    votes: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for row, direction_code, _, _, segment_id, _ in rows:
        votes[(direction_code, segment_id)][(row["src"], row["ref"])] += 1
    for gold_key, counter in votes.items():
        ranked = counter.most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            errors.append(f"segment {gold_key[0]}#{gold_key[1]}: files disagree on its src/ref with no majority")
            continue
        gold[gold_key] = ranked[0][0]
    return gold


def read_group(group: FileGroup, *, strict: bool = False) -> GroupRead:
    """Parse and validate one language's files; every problem is collected with its file and row."""
    out = GroupRead(group.language)
    errors = out.errors
    seen_keys: dict[tuple[str, str, int], str] = {}
    rows: list[tuple[dict, str, str, int, str, str]] = []  # (row, direction, etype, count_id, segment_id, loc)
    lang = group.language
    for name, direction_code, etype, data in group.files:
        table, problem = _candidate_table(data, group.limits)
        if problem:
            errors.append(f"{name}: {problem}")
            continue
        for i, row in enumerate(table.select(list(CANDIDATE_COLUMNS)).to_pylist(), start=1):
            loc = f"{name} row {i}"
            problems = _cell_problems(row, group.limits)
            if problems:
                errors.append(f"{loc}: {', '.join(problems)}")
                continue
            problem, count_id, segment_id = _row_identity(row, lang, etype)
            if problem:
                errors.append(f"{loc}: {problem}")
                continue
            key = (lang, etype, count_id)
            if key in seen_keys:
                errors.append(f"{loc}: duplicate count_id {count_id} (first at {seen_keys[key]})")
                continue
            seen_keys[key] = loc
            rows.append((row, direction_code, etype, count_id, segment_id, loc))

    # The gold pair of a segment is what the files agree on. The published data has one file whose copy
    # of a reference is corrupted (en-id segment 265 in the Omission file: a quote moved); its rows are
    # read against the agreed reference and flagged, or rejected with --strict.
    out.gold.update(_agreed_gold(rows, errors))
    for row, direction_code, etype, count_id, segment_id, loc in rows:
        gold = out.gold.get((direction_code, segment_id))
        if gold is None:
            continue
        mismatch = ""
        if (row["src"], row["ref"]) != gold:
            if strict:
                errors.append(f"{loc}: segment {segment_id} has a different src/ref than the other files")
                continue
            mismatch = (
                "this row's copy of the reference differs from the other files'; read against the agreed reference"
            )
            row = {**row, "src": gold[0], "ref": gold[1]}
        try:
            candidate = _read_candidate(row, lang, direction_code, etype, count_id, segment_id, loc, strict, mismatch)
        except MarkupError as exc:
            errors.append(f"{loc}: mt markup: {exc}")
            continue
        out.candidates.append(candidate)
    return out


def candidate_checks(xc: XQCandidate) -> tuple[dict, list[str]]:
    """The automatic checks of an injected candidate, plus what reading the release found (an edit outside
    the marked span, a row whose reference differed from the agreed one). They flag; they never drop."""
    from core.domain.edit_types import MQM
    from injection.domain.checks import run_checks

    checks, flags = run_checks(
        reference=xc.ref,
        candidate_text=xc.text,
        source=xc.src,
        marked_outside_ok=xc.outside_ok,
        kind=MQM,
        **fields_of(xc, "edit", "language", "error_type", "position", "regions"),
    )
    if not xc.outside_ok:
        checks.setdefault("local_edit", {"passed": False, "detail": ""})["detail"] = xc.outside_detail
    if xc.reference_mismatch:
        checks["reference_mismatch"] = {"passed": False, "detail": xc.reference_mismatch}
        flags.append("reference_mismatch")
    return checks, flags


def read_and_check_group(group: FileGroup, strict: bool = False) -> GroupRead:
    """``read_group`` then the checks of every candidate: what an import worker process does for a language
    (top level and pure, so a process pool can run it)."""
    read = read_group(group, strict=strict)
    if not read.errors:
        read.checks = [candidate_checks(xc) for xc in read.candidates]
    return read


def validate_group(
    group: FileGroup, strict: bool, decisions_path: str | None, decisions_name: str
) -> tuple[str, int, list[str]]:
    """(language, candidates, problems) of one language's files and its spooled decisions, nothing kept:
    the validation pass that runs over every language before parallel writers write any (pure, top level,
    for a process pool)."""
    read = read_group(group, strict=strict)
    errors = list(read.errors)
    rows = read_spooled(decisions_path, group.language, decisions_name, errors)
    match_decisions(read.candidates, rows, errors)
    errors += unmatched_decisions(rows)
    return group.language, len(read.candidates), errors


class DecisionSpool:
    """The rows of a decisions CSV split by target language into temporary files as they are read, so an
    import holds one language's decisions at a time (a FLORES-sized file has 1.6 M rows: ≈ 0.8 GB as one
    dict). ``take`` reads one language back; ``rest`` lists what no language took. Close it (or use it as a
    context manager) to delete the files."""

    PREFIX = "xq-decisions-"

    def __init__(self, name: str):
        import os
        import tempfile

        self.name = name
        sweep_stale_spools()
        # the owner's pid in the name: a spool whose process died (kill -9) is swept by the next import
        self.directory = Path(tempfile.mkdtemp(prefix=f"{self.PREFIX}{os.getpid()}-"))
        self._files: dict[str, tuple] = {}  # language -> (file, csv writer)
        self._opened = 0

    def add(
        self, language: str, error_type: str, count_id: int, segment_id: str, position: str, decision: str, line: int
    ) -> None:
        entry = self._files.get(language)
        if entry is None:
            self._opened += 1
            fh = open(self.directory / f"{self._opened}.csv", "w", encoding="utf-8", newline="")
            entry = self._files[language] = (fh, csv.writer(fh))
        entry[1].writerow((error_type, count_id, segment_id, position, decision, line))

    def take(self, language: str, errors: list[str]) -> dict[tuple[str, str, int], DecisionRow]:
        """One language's decisions (candidate key -> row); a second, different decision for a candidate is
        an error. The language's file is deleted."""
        path = self.finish(language)
        rows = read_spooled(path, language, self.name, errors)
        if path is not None:
            self._files.pop(language)
            Path(path).unlink()
        return rows

    def finish(self, language: str) -> str | None:
        """The path of one language's file, closed so another process can read it (``read_spooled``);
        None when the decisions had no row of that language. The file stays until ``take`` or ``close``."""
        entry = self._files.get(language)
        if entry is None:
            return None
        entry[0].close()
        return entry[0].name

    def languages(self) -> list[str]:
        return list(self._files)

    def rest(self, errors: list[str]) -> dict[tuple[str, str, int], DecisionRow]:
        """The decisions of every language not taken yet."""
        rows: dict[tuple[str, str, int], DecisionRow] = {}
        for language in list(self._files):
            rows.update(self.take(language, errors))
        return rows

    def close(self) -> None:
        import shutil

        for fh, _ in self._files.values():
            fh.close()
        self._files.clear()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> DecisionSpool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_spooled(
    path: str | None, language: str, name: str, errors: list[str]
) -> dict[tuple[str, str, int], DecisionRow]:
    """One language's spooled decisions (candidate key -> row), read from its closed file (``finish``); a
    second, different decision for a candidate is an error. Pure: an import worker process reads it too."""
    rows: dict[tuple[str, str, int], DecisionRow] = {}
    if path is None:
        return rows
    with open(path, encoding="utf-8", newline="") as spooled:
        for error_type, count_id, segment_id, position, decision, line in csv.reader(spooled):
            key = (language, error_type, int(count_id))
            previous = rows.get(key)
            if previous is not None:
                if previous.decision != decision:
                    errors.append(f"{name} line {line}: a second, different decision for the same candidate")
                continue
            rows[key] = DecisionRow(segment_id, position, decision, f"{name} line {line}")
    return rows


def sweep_stale_spools(directory: str | None = None, max_age_s: float = 24 * 3600) -> list[str]:
    """Delete the spool folders of processes that are gone (the pid in the name names no process), and
    folders without a pid older than ``max_age_s`` (from before pids were named). Returns what it removed."""
    import shutil
    import tempfile
    import time

    removed = []
    root = Path(directory or tempfile.gettempdir())
    for folder in root.glob(DecisionSpool.PREFIX + "*"):
        owner = folder.name[len(DecisionSpool.PREFIX) :].split("-", 1)[0]
        try:
            if owner.isdigit():
                if process_alive(int(owner)):
                    continue
            elif time.time() - folder.stat().st_mtime < max_age_s:
                continue
            shutil.rmtree(folder)
            removed.append(str(folder))
        except OSError:
            continue  # another import swept it first, or it is not ours to remove
    return removed


def spool_decisions(
    decisions: tuple[str, bytes | Path] | None, limits: Limits = DEFAULT_LIMITS
) -> tuple[DecisionSpool, list[str]]:
    """Read and validate a decisions CSV (its content, or a path read as a stream) row by row into a
    ``DecisionSpool``. Which candidate each row names is checked per language by ``match_decisions``.
    Whatever goes wrong while reading, the spool's folder is removed before the error leaves."""
    name = decisions[0] if decisions is not None else ""
    spool = DecisionSpool(name)
    try:
        return spool, _fill_spool(spool, decisions, limits)
    except BaseException:
        spool.close()
        raise


def _decision_cells(row: dict, limits: Limits) -> tuple[str, int, str]:
    """(problem, count id, decision) of one row of the decisions file: the problem empty when it can be spooled."""
    long = [(c, text_length_problem(v, limits)) for c, v in row.items() if isinstance(v, str)]
    long = [f"{c!r} {problem}" for c, problem in long if problem]
    if long:
        return ", ".join(long), 0, ""
    short = [c for c in DECISION_COLUMNS if row.get(c) is None]
    if short:
        return f"no value for {', '.join(short)}", 0, ""
    try:
        count_id = int(row["count_id"])
    except (TypeError, ValueError):
        return f"count_id {row['count_id']!r} is not an integer", 0, ""
    value = DECISION_VALUES.get(row["decision"].strip())
    if value is None:
        return f"decision {row['decision']!r} is not accepted or rejected", 0, ""
    return "", count_id, value


def _fill_spool(spool: DecisionSpool, decisions: tuple[str, bytes | Path] | None, limits: Limits) -> list[str]:
    name, data = decisions if decisions is not None else ("", b"")
    if decisions is None:
        return []
    errors: list[str] = []
    stream = open(data, "rb") if isinstance(data, Path) else io.BytesIO(data)
    try:
        text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
        reader = csv.DictReader(text)
        try:
            fieldnames = reader.fieldnames
            if not fieldnames:
                return [f"{name}: the file is empty"]
            missing = [c for c in DECISION_COLUMNS if c not in fieldnames]
            if missing:
                return [f"{name} line 1: missing column(s) {', '.join(missing)}"]
            if len(fieldnames) > limits.columns:
                return [f"{name} line 1: {len(fieldnames)} columns, more than the {limits.columns} allowed"]
            # (a csv.Error, e.g. a field over the csv module's size limit, is caught below)
            for number, row in enumerate(reader, start=1):
                loc = f"{name} line {reader.line_num}"
                if number > limits.rows:
                    return errors + [f"{loc}: more than {limits.rows} rows"]
                problem, count_id, value = _decision_cells(row, limits)
                if problem:
                    errors.append(f"{loc}: {problem}")
                    continue
                spool.add(
                    row["language"],
                    row["error_type"],
                    count_id,
                    str(row["segment_id"]).strip(),
                    row["error_position"],
                    value,
                    reader.line_num,
                )
        except UnicodeDecodeError as exc:
            stream.seek(0)
            bom = byte_order_mark_problem(stream.read(4), name)
            if bom:
                return [bom]
            return [f"{name}: not valid UTF-8 (byte {exc.start} of a read block, after line {reader.line_num})"]
        except csv.Error as exc:
            return errors + [f"{name} line {reader.reader.line_num}: {exc}"]  # (DictReader.line_num: the last good row)
    finally:
        stream.close()
    return errors


def match_decisions(
    candidates: list[XQCandidate], rows: dict[tuple[str, str, int], DecisionRow], errors: list[str]
) -> dict[tuple[str, str, int], str]:
    """The decisions (candidate key -> accept|reject) of these candidates; a row that disagrees with its
    candidate is an error. Matched rows are removed from ``rows``: what is left names no candidate."""
    matched: dict[tuple[str, str, int], str] = {}
    for candidate in candidates:
        row = rows.pop(candidate.key, None)
        if row is None:
            continue
        if row.segment_id != candidate.segment_id or row.position != candidate.position:
            errors.append(f"{row.location}: segment_id/error_position disagree with {candidate.location}")
            continue
        matched[candidate.key] = row.decision
    return matched


def unmatched_decisions(rows: dict[tuple[str, str, int], DecisionRow]) -> list[str]:
    return [
        f"{row.location}: no candidate {lang}/{etype}/{count_id} in the candidate files"
        for (lang, etype, count_id), row in rows.items()
    ]


def read_release(
    files: list[tuple[str, object]], decisions: tuple[str, bytes] | None = None, *, strict: bool = False
) -> XQRelease:
    """Parse and validate candidate files (name, content or path) and an optional decisions CSV, all at once
    (the import streams the same steps one language at a time).

    ``strict``: a candidate with more than one ``<v>`` region is an error. Otherwise it is kept (the
    published data has two such GPT-4o outputs, both rejected by the reviewers), its edit spans all regions
    and the ``single_region`` check flags it."""
    groups, errors = plan_files(files)
    release = XQRelease()
    spool, decision_errors = spool_decisions(decisions)
    with spool:
        for group in groups:
            read = read_group(group, strict=strict)
            errors += read.errors
            release.gold.update(read.gold)
            release.candidates += read.candidates
            rows = spool.take(group.language, errors)
            release.decisions.update(match_decisions(read.candidates, rows, errors))
            errors += unmatched_decisions(rows)
        errors += decision_errors + unmatched_decisions(spool.rest(errors))
    if errors:
        raise XQMEvalFormatError(errors)
    return release


def _read_candidate(row, lang, direction_code, etype, count_id, segment_id, loc, strict, mismatch="") -> XQCandidate:
    mt, ref = row["mt"], row["ref"]
    tags = _TAG_RE.findall(mt)
    regions = tags.count("<v>")
    if regions > 1 and tags.count("</v>") == regions and tags == ["<v>", "</v>"] * regions:
        if strict:
            raise MarkupError(f"{regions} <v>…</v> regions, expected exactly one")
        text = strip_markup(mt)
        edit = diff_edit(ref, text, lang) or Edit(0, 0, ())
        outside_ok, detail = True, ""
    else:
        parsed = parse_marked(mt, ref, lang)  # raises MarkupError for none/unbalanced/nested
        text, edit, outside_ok, detail = parsed.text, parsed.edit, parsed.outside_matches_reference, parsed.outside_diff
        regions = 1
    return XQCandidate(
        direction_code=direction_code,
        language=lang,
        error_type=etype,
        count_id=count_id,
        segment_id=segment_id,
        position=row["error_position"],
        src=row["src"],
        ref=ref,
        text=text,
        edit=edit,
        regions=regions,
        outside_ok=outside_ok,
        outside_detail=detail,
        marked=mt,
        location=loc,
        reference_mismatch=mismatch,
    )
