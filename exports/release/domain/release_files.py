"""The files of a benchmark release: Hugging Face dataset layout, byte-identical when rebuilt. No Django.

Layout (a contract with the scoring worker; keep it)::

    README.md                      dataset card, YAML metadata with one config per direction
    manifest.json                  files with sha256 and size, counts, sampling plan, content hash
    <direction>/test.parquet       one row per triplet (s, r̃, r)
    systems/monolingual.parquet    one row per (pseudo system, triplet)
    systems/multilingual.parquet
    excluded_candidates.csv        candidates kept out of the merge, with reasons
    transplanted_candidates.csv    candidates placed by transplanting their edit (flag ``transplanted``), with the drift
    human/span_annotations.parquet people's error spans and scores (ESA, MQM) on the triplets, when there are any
    <direction>/test.jsonl|.tsv    on request

Byte identity: rows arrive in a fixed order, parquet is written with fixed options and no timestamps, JSON
with sorted keys, and nothing depends on the clock, the machine or database ids. The *content hash* covers
what the release says — rows, systems, exclusions, counts, sampling plan — and then the sha256 of every
canonical file (``_bytes_hash``), so two releases whose files differ never share a hash (a newer pyarrow
that writes other bytes makes another release: a released version is not rewritten with them). JSONL/TSV
are derived from the same rows and may be added to an existing version: they are not in the hash, and the
manifest records each file's sha256 and the writer versions.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import os
import re
import shutil
import string
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from core.domain.errors import Conflict
from core.domain.spreadsheet import safe_cell
from exports.benchmark.domain import TRANSPLANTED, counts_table_rows
from exports.release.domain.sampling import SystemDraw

SCHEMA_VERSION = 1
EXTRA_FORMATS = ("jsonl", "tsv")
PARQUET_OPTIONS = dict(
    compression="zstd",
    use_dictionary=True,
    write_statistics=True,
    version="2.6",
    data_page_version="1.0",
    store_schema=True,
    row_group_size=1 << 17,
)

SPAN_TYPE = pa.struct(
    [
        ("candidate", pa.string()),
        ("error_type", pa.string()),
        ("ref_start", pa.int32()),
        ("ref_end", pa.int32()),
        ("mt_start", pa.int32()),
        ("mt_end", pa.int32()),
    ]
)
TRIPLET_SCHEMA = pa.schema(
    [
        ("triplet_id", pa.string()),
        ("direction", pa.string()),
        ("segment_id", pa.string()),
        ("src", pa.string()),
        ("ref", pa.string()),
        ("mt", pa.string()),
        ("mt_marked", pa.string()),
        ("num_errors", pa.int32()),
        ("mqm_penalty", pa.int32()),
        ("human_score", pa.int32()),
        ("error_types", pa.list_(pa.string())),
        ("spans", pa.list_(SPAN_TYPE)),
        ("unit", pa.string()),
        ("flags", pa.list_(pa.string())),
    ]
)
SYSTEM_SCHEMA = pa.schema(
    [
        ("system_id", pa.string()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("repetition", pa.int32()),
        ("seed", pa.int64()),
        ("human_score", pa.float64()),
        ("level_mix", pa.string()),
        ("direction", pa.string()),
        ("level", pa.int32()),
        ("triplet_id", pa.string()),
    ]
)
LONG_TEXT_COLUMNS = ("src", "ref", "mt", "mt_marked")
# a candidate kept out of the merge or transplanted: where it stands, then why (its reason or its drift)
CANDIDATE_COLUMNS = [
    "direction",
    "segment_id",
    "candidate",
    "error_type",
    "position",
    "external_id",
    "span_start",
    "span_end",
]
EXCLUDED_COLUMNS = [*CANDIDATE_COLUMNS, "reason"]
TRANSPLANTED_COLUMNS = [*CANDIDATE_COLUMNS, "drift"]
SPAN_ANNOTATIONS_FILE = "human/span_annotations.parquet"
HUMAN_SPAN_TYPE = pa.struct(
    [
        ("side", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("severity", pa.string()),
        ("category", pa.string()),
        ("origin", pa.string()),
    ]
)
SPAN_ANNOTATION_SCHEMA = pa.schema(
    [
        ("triplet_id", pa.string()),
        ("direction", pa.string()),
        ("num_errors", pa.int32()),
        ("task", pa.string()),
        ("protocol", pa.string()),
        ("annotator", pa.string()),
        ("score", pa.float64()),
        ("spans", pa.list_(HUMAN_SPAN_TYPE)),
    ]
)
SPAN_ANNOTATION_ORDER = ("task", "direction", "triplet_id", "annotator")
TRANSPLANTED_FLAG = TRANSPLANTED

CITATION = """@misc{xqmeval2026,
  title         = {XQ-MEval: A Dataset with Cross-lingual Parallel Quality for Benchmarking Translation Metrics},
  author        = {Liu and Qu, Zhi and others},
  year          = {2026},
  eprint        = {2604.14934},
  archivePrefix = {arXiv},
  primaryClass  = {cs.CL}
}"""


class ReleaseConflict(Conflict):
    """Different content under an existing version, or an output directory holding another release."""

    code = "release_conflict"


@dataclass
class ReleaseContent:
    """What a release says, streamed: triplet rows come one direction at a time from ``rows`` and the
    pseudo systems are drawn by ``systems`` from the triplet ids once those are written, so nothing holds
    the whole release. ``write_release`` fills in the figures it counts on the way (``total_triplets``,
    ``shortfalls``, ``system_counts``)."""

    name: str
    version: str
    title: str
    description: str
    license: str
    source_language: str
    directions: list[str]  # direction codes, in release order
    rows: Callable[[str], Iterable[dict]]  # one direction's triplet rows in release order
    # (directions, load: direction -> its triplet ids per level) -> (monolingual, multilingual) draws
    systems: Callable[[list[str], Callable[[str], dict]], tuple[Iterable[SystemDraw], Iterable[SystemDraw]]]
    excluded: list[dict]
    counts: dict
    sampling_plan: dict
    build: dict = field(default_factory=dict)  # how it was built: pool rule, max_errors, sources
    agreement: dict | None = None
    on_system: Callable[[SystemDraw], None] | None = None  # called with each draw as it is written
    total_triplets: int = 0
    transplanted_triplets: int = 0  # triplets with the transplanted flag, counted as they stream by
    shortfalls: list[str] = field(default_factory=list)
    transplanted: list[dict] = field(default_factory=list)  # candidates placed by transplanting their edit
    system_counts: dict = field(default_factory=lambda: {"monolingual": 0, "multilingual": 0})
    # people's annotations of the triplets (SPAN_ANNOTATION_SCHEMA's columns; annotators as pseudonyms); an
    # empty list writes no file and leaves the content hash of a release without them as it was
    span_annotations: list[dict] = field(default_factory=list)

    @property
    def target_languages(self) -> list[str]:
        return sorted({d.split("-", 1)[1] for d in self.directions})


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _canonical_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


ROW_GROUP = PARQUET_OPTIONS["row_group_size"]
TRIPLET_BATCH = 2048  # rows turned into Arrow at a time while a direction streams in


def _write_parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, **PARQUET_OPTIONS)


def _triplet_table(rows: list[dict]) -> pa.Table:
    columns = {name: [r[name] for r in rows] for name in TRIPLET_SCHEMA.names}
    return pa.Table.from_pydict(columns, schema=TRIPLET_SCHEMA)


def _system_table(systems: list[SystemDraw]) -> pa.Table:
    """One row per (system, triplet). Per-system and per-block values are repeated with ``take`` in
    Arrow rather than in Python lists: the multilingual table has about a million rows."""
    sizes = np.array([s.size for s in systems], dtype=np.int64)
    per_system = np.repeat(np.arange(len(systems), dtype=np.int64), sizes)
    blocks = [b for s in systems for b in s.blocks]
    per_block = np.repeat(np.arange(len(blocks), dtype=np.int64), np.array([len(b[2]) for b in blocks], dtype=np.int64))

    def repeat(values, index, typ):
        return pc.take(pa.array(values, type=typ), pa.array(index, type=pa.int64()))

    columns = {
        "system_id": repeat([s.system_id for s in systems], per_system, pa.string()),
        "kind": repeat([s.kind for s in systems], per_system, pa.string()),
        "name": repeat([s.name for s in systems], per_system, pa.string()),
        "repetition": repeat([s.repetition for s in systems], per_system, pa.int32()),
        "seed": repeat([s.seed for s in systems], per_system, pa.int64()),
        "human_score": repeat([s.human_score for s in systems], per_system, pa.float64()),
        "level_mix": repeat(
            [_canonical_json({str(k): v for k, v in sorted(s.level_mix.items())}) for s in systems],
            per_system,
            pa.string(),
        ),
        "direction": repeat([b[0] for b in blocks], per_block, pa.string()),
        "level": repeat([b[1] for b in blocks], per_block, pa.int32()),
        "triplet_id": pa.array([t for b in blocks for t in b[2]], type=pa.string()),
    }
    return pa.Table.from_pydict(columns, schema=SYSTEM_SCHEMA)


class _RowGroupWriter:
    """Parquet written a piece at a time with the bytes of ``pq.write_table`` on the whole table: pieces
    are cut into row groups of exactly ``row_group_size`` rows (the last one shorter), each written from
    contiguous arrays, so the file does not depend on how the rows arrived. Holds at most one row group."""

    def __init__(self, path: Path, schema: pa.Schema):
        self.path, self.schema = path, schema
        self.options = {k: v for k, v in PARQUET_OPTIONS.items() if k != "row_group_size"}
        self.writer: pq.ParquetWriter | None = None
        self.pending: list[pa.Table] = []
        self.pending_rows = 0

    def write(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.pending_rows += table.num_rows
        if self.pending_rows >= ROW_GROUP:
            whole = pa.concat_tables(self.pending)
            full = whole.num_rows // ROW_GROUP * ROW_GROUP
            self._emit(whole.slice(0, full).combine_chunks())
            rest = whole.slice(full).combine_chunks()
            self.pending, self.pending_rows = [rest], rest.num_rows

    def _emit(self, table: pa.Table) -> None:
        if self.writer is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.path, self.schema, **self.options)
        self.writer.write_table(table, row_group_size=ROW_GROUP)

    def close(self) -> None:
        rest = pa.concat_tables(self.pending).combine_chunks() if self.pending else self.schema.empty_table()
        if self.writer is None:
            _write_parquet(rest, self.path)  # small (or empty) table: exactly the whole-table writer
            return
        if rest.num_rows:
            self._emit(rest)
        self.writer.close()


def _jsonl_line(r: dict) -> str:
    return json.dumps({name: r[name] for name in TRIPLET_SCHEMA.names}, ensure_ascii=False) + "\n"


def _tsv_writer(fh):
    writer = csv.writer(fh, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(TRIPLET_SCHEMA.names)
    return writer


def _tsv_row(r: dict) -> list:
    return [_canonical_json(r[n]) if isinstance(r[n], (list, dict)) else r[n] for n in TRIPLET_SCHEMA.names]


def _write_excluded(rows: list[dict], path: Path, columns: list[str] = EXCLUDED_COLUMNS) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        write_candidate_table(rows, fh, columns)


def write_candidate_table(rows: list[dict], fh, columns: list[str]) -> None:
    """A list of candidates (excluded, transplanted) as CSV to ``fh``: the release's file, and the same
    table downloaded from the benchmark page."""
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([safe_cell(r[c]) for c in columns])  # a table for people: opened in spreadsheets


def size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if n < limit:
            return label
    return "1M<n<10M"


class _Digest:
    """The content digest (sha256 of what the release *says*: every triplet row with its columns in schema
    order, every system draw, the excluded candidates, counts and sampling plan, as compact JSON), fed as
    the release streams by; the content hash is this stream followed by the canonical files' sha256
    (``_bytes_hash``). Its byte layout is that of the whole-release hash it replaces:
    ``tag\t<json>\n`` per section, a list section written item by item, and per direction the long texts
    length-prefixed after the small fields (JSON-escaping ~40 MB of text would cost seconds)."""

    SMALL = [n for n in TRIPLET_SCHEMA.names if n not in LONG_TEXT_COLUMNS]

    def __init__(self, sink=None):
        # ``sink``: anything with ``update(bytes)``; a ``_Spool`` keeps a direction's share of the stream
        self.h = sink if sink is not None else hashlib.sha256()
        self.first = True
        self.content_digest = ""  # set by _bytes_hash: the stream's sha256 before the files section

    def section(self, tag: str, value, canonical: bool = False) -> None:
        text = _canonical_json(value) if canonical else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        self.h.update(tag.encode() + b"\t" + text.encode() + b"\n")

    def begin(self, tag: str) -> None:
        self.h.update(tag.encode() + b"\t[")
        self.first = True

    def item(self, value) -> None:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        self.h.update(text.encode() if self.first else b"," + text.encode())
        self.first = False

    def end(self) -> None:
        self.h.update(b"]\n")

    def texts(self, table: pa.Table) -> None:
        for start in range(0, table.num_rows, 8192):
            cols = table.slice(start, 8192).select(list(LONG_TEXT_COLUMNS)).to_pydict()
            values = [cols[n] for n in LONG_TEXT_COLUMNS]
            self.h.update("".join(f"{len(v[i])}:{v[i]}" for i in range(len(values[0])) for v in values).encode())

    def hexdigest(self) -> str:
        return self.h.hexdigest()


class _Spool:
    """A direction's share of the content hash's byte stream, kept in a file (``update`` like a hash), with
    the sha256 of those bytes. The hash of a release is one sha256 over every direction in order, which
    cannot be put together from per-direction hashes: the finishing step feeds the spools in order."""

    def __init__(self, path: Path):
        self.fh = open(path, "wb")
        self.sha = hashlib.sha256()

    def update(self, data: bytes) -> None:
        self.fh.write(data)
        self.sha.update(data)

    def close(self) -> str:
        self.fh.close()
        return self.sha.hexdigest()


SPOOL_DIR = ".spool"  # in a staged release: <direction>.bin (hashed bytes) and <direction>.json (its summary)


def _system_item(d: SystemDraw) -> list:
    return [
        d.system_id,
        d.kind,
        d.name,
        d.repetition,
        d.seed,
        [[k, v] for k, v in sorted(d.level_mix.items())],
        d.blocks,
    ]


def _begin_digest(content: ReleaseContent) -> _Digest:
    """The content digest opened with the release's header, and the figures counted on the way reset: the
    same start whether the directions are written here or were staged."""
    digest = _Digest()
    digest.section(
        "release",
        {"schema_version": SCHEMA_VERSION, "counts": content.counts, "sampling_plan": content.sampling_plan},
        True,
    )
    content.total_triplets = content.transplanted_triplets = 0
    return digest


def write_release(
    content: ReleaseContent,
    out_dir: str | Path,
    formats: tuple[str, ...] = (),
    progress=None,
    expected_hash: str | None = None,
) -> dict:
    """Write the release into ``out_dir`` and return its manifest. Refuses (``ReleaseConflict``) when
    ``out_dir`` already holds a release with a different content hash; the same release is rewritten with
    the same bytes (with the same writer libraries); with ``expected_hash`` (the hash recorded for an
    existing version) any other content is refused. Files are streamed into a temporary directory next to
    ``out_dir`` and moved in only once the content hash is known and accepted, so a refused release
    leaves ``out_dir`` untouched.

    Streaming: each direction's rows arrive from ``content.rows`` and are held as Arrow columns for that
    direction only (its parquet file is one row group up to 131,072 rows: a direction of FLORES size),
    JSONL/TSV lines are written as they come, and pseudo systems are drawn, hashed, written in row groups
    and handed to ``content.on_system`` one at a time. Memory follows the largest direction, not the
    release: each direction's triplet ids (the pool the systems are drawn from) wait in the staging
    directory and are read back one direction at a time."""
    unknown = set(formats) - set(EXTRA_FORMATS)
    if unknown:
        raise ValueError(f"unknown format(s) {', '.join(sorted(unknown))}; choose from {', '.join(EXTRA_FORMATS)}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    step = progress or (lambda stage, pct: None)
    existing = _existing_hash(out_dir)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        digest = _begin_digest(content)
        directions = sorted(content.directions)
        (staging / SPOOL_DIR).mkdir()
        for i, direction in enumerate(directions):
            part = _write_direction(content.rows(direction), direction, staging, formats, digest)
            _write_levels(staging / SPOOL_DIR / f"{direction}.json", {"levels": _levels_json(part["levels"])})
            content.total_triplets += part["triplets"]
            content.transplanted_triplets += part["transplanted"]
            step(f"triplets {direction}", int(60 * (i + 1) / max(len(directions), 1)))
        return _finish(content, digest, staging, out_dir, formats, step, existing, expected_hash)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def span_annotation_rows(rows: Iterable[dict]) -> list[dict]:
    """The span annotations in the file's order, each checked against the schema: a missing or unknown
    column, or a span that is not ``[start, end)`` with ``end > start``, is refused naming the row."""
    out = []
    names = set(SPAN_ANNOTATION_SCHEMA.names)
    span_names = {f.name for f in HUMAN_SPAN_TYPE}
    for number, row in enumerate(rows, 1):
        if set(row) != names:
            raise ValueError(f"span annotation {number}: columns {sorted(set(row) ^ names)} differ from the schema's")
        for s in row["spans"]:
            if set(s) != span_names or not 0 <= s["start"] < s["end"] or s["side"] not in ("source", "target"):
                raise ValueError(f"span annotation {number} ({row['triplet_id']}, {row['annotator']}): bad span {s!r}")
        out.append(row)
    return sorted(out, key=lambda r: tuple(r[c] for c in SPAN_ANNOTATION_ORDER))


def _levels_json(levels: dict[int, list[str]]) -> dict[str, list[str]]:
    return {str(k): v for k, v in sorted(levels.items())}


def _write_levels(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def _staged_levels(store: StagedStore) -> Callable[[str], dict[int, list[str]]]:
    """Reads one direction's triplet ids per level back from ``.spool/<direction>.json`` in ``store``."""

    def load(direction_code: str) -> dict[int, list[str]]:
        summary = _stored_json(store, f"{SPOOL_DIR}/{direction_code}.json")
        return {int(k): v for k, v in summary["levels"].items()}

    return load


HASH_COVERS = "the counts, the sampling plan and the bytes of the canonical files"
HASH_COVERS_BEFORE = "the counts and the sampling plan"  # a version whose hash was recorded before #48


def _bytes_hash(digest: _Digest, files: dict[str, str], *recorded: str | None) -> str:
    """The content hash: the content digest's stream, then a ``files`` section with the sha256 of each
    canonical file (path order), so two releases whose files differ in any byte never share a hash. A
    version recorded before the hash covered the bytes (its recorded hash is the content digest alone)
    keeps that hash when its content is unchanged, so its card and manifest stay as they were published."""
    content_digest = digest.content_digest = digest.hexdigest()
    if content_digest in recorded:
        return content_digest
    digest.section("files", [[path, files[path]] for path in sorted(files)])
    return digest.hexdigest()


def _finish(
    content: ReleaseContent,
    digest: _Digest,
    staging: Path,
    out_dir: Path,
    formats,
    step,
    existing,
    expected_hash,
    rename: bool = False,
    levels: StagedStore | None = None,
) -> dict:
    """What follows the directions, on either path: pseudo systems drawn from the triplet ids staged in
    ``.spool`` of ``levels`` (default ``staging``; read one direction at a time), exclusions, the
    content hash checked, card and manifest written, files moved from ``staging`` into ``out_dir`` (with
    ``rename``, a new ``out_dir`` is ``staging`` renamed)."""
    directions = sorted(content.directions)
    canonical = [f"{direction_code}/test.parquet" for direction_code in directions]
    derived = [
        f"{direction_code}/test.{fmt}" for direction_code in directions for fmt in EXTRA_FORMATS if fmt in formats
    ]
    canonical += _write_release_lists(content, digest, staging, levels or LocalStaged(staging), step)
    hashes = {path: sha256_file(staging / path) for path in canonical + derived}
    content_hash = _bytes_hash(digest, {path: hashes[path] for path in canonical}, expected_hash, existing)
    _check_content_hash(content, content_hash, out_dir, existing, expected_hash)

    covers = HASH_COVERS_BEFORE if content_hash == digest.content_digest else HASH_COVERS
    (staging / "README.md").write_text(dataset_card(content, content_hash, canonical, covers), encoding="utf-8")
    hashes["README.md"] = sha256_file(staging / "README.md")
    manifest = _manifest(content, content_hash, hashes, canonical, staging)
    (staging / "manifest.json").write_text(
        json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2) + "\n", encoding="utf-8"
    )
    _move_in(staging, out_dir, sorted(hashes) + ["manifest.json"], rename)
    step("written", 100)
    return manifest


def _write_release_lists(content: ReleaseContent, digest: _Digest, staging: Path, levels: StagedStore, step) -> list:
    """The files after the directions, hashed as they are written: the pseudo systems drawn from the triplet
    ids staged in ``levels``, the excluded and transplanted candidates, people's span annotations when there
    are any. Returns their paths (canonical files all)."""
    monolingual, multilingual = content.systems(sorted(content.directions), _staged_levels(levels))
    digest.begin("systems")
    shortfalls: set[str] = set()
    for kind, draws, pct in (("monolingual", monolingual, 70), ("multilingual", multilingual, 85)):
        content.system_counts[kind] = _write_systems(
            draws, staging / "systems" / f"{kind}.parquet", digest, content.on_system, shortfalls
        )
        step(f"{kind} systems", pct)
    digest.end()
    content.shortfalls = sorted(shortfalls)
    canonical = ["systems/monolingual.parquet", "systems/multilingual.parquet"]
    for tag, rows, columns in (
        ("excluded", content.excluded, EXCLUDED_COLUMNS),
        ("transplanted", content.transplanted, TRANSPLANTED_COLUMNS),
    ):
        digest.section(tag, [[row[c] for c in columns] for row in rows])
        _write_excluded(rows, staging / f"{tag}_candidates.csv", columns)
        canonical.append(f"{tag}_candidates.csv")
    if content.span_annotations:
        rows = span_annotation_rows(content.span_annotations)
        digest.section("span_annotations", [[row[c] for c in SPAN_ANNOTATION_SCHEMA.names] for row in rows])
        _write_parquet(pa.Table.from_pylist(rows, schema=SPAN_ANNOTATION_SCHEMA), staging / SPAN_ANNOTATIONS_FILE)
        canonical.append(SPAN_ANNOTATIONS_FILE)
    return canonical


def _check_content_hash(content: ReleaseContent, content_hash: str, out_dir: Path, existing, expected_hash) -> None:
    """Refuse a content hash other than the one recorded for the version, or than the one ``out_dir`` holds."""
    if expected_hash and expected_hash != content_hash:
        raise ReleaseConflict(
            f"version {content.version} was released with content hash {expected_hash}, but the current data give "
            f"{content_hash}: a released version is immutable, release the new content under a new version"
        )
    if existing is not None and existing != content_hash:
        raise ReleaseConflict(
            f"{out_dir} already holds a release with content hash {existing}; this build has {content_hash}. "
            "Use another output directory (and another version)."
        )


def _manifest(content: ReleaseContent, content_hash: str, hashes: dict, canonical: list, staging: Path) -> dict:
    return {
        "name": content.name,
        "version": content.version,
        "schema_version": SCHEMA_VERSION,
        "content_hash": content_hash,
        "files": {p: {"sha256": hashes[p], "bytes": (staging / p).stat().st_size} for p in sorted(hashes)},
        "canonical_files": sorted(canonical),
        "counts": content.counts,
        "sampling_plan": content.sampling_plan,
        "systems": dict(content.system_counts),
        "shortfalls": content.shortfalls,
        "excluded_candidates": len(content.excluded),
        "transplanted_candidates": len(content.transplanted),
        **({"span_annotations": len(content.span_annotations)} if content.span_annotations else {}),
        "triplets": content.total_triplets,
        "build": content.build,
        "writer": {"pyarrow": pa.__version__, "parquet": {k: v for k, v in sorted(PARQUET_OPTIONS.items())}},
    }


def _move_in(staging: Path, out_dir: Path, paths: list[str], rename: bool) -> None:
    """The written files into ``out_dir``: with ``rename``, a new ``out_dir`` is ``staging`` renamed."""
    if rename and not out_dir.exists():
        # a new release directory appears at once, complete: the staging directory (same file system)
        # becomes it, less what only the writer needed
        shutil.rmtree(staging / SPOOL_DIR, ignore_errors=True)
        os.replace(staging, out_dir)
    else:  # the same release again (e.g. with formats added): its files replaced one by one
        for path in paths:
            target = out_dir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / path, target)


def _write_direction(rows: Iterable[dict], direction_code: str, staging: Path, formats, digest: _Digest) -> dict:
    """One direction: rows hashed and turned into Arrow batches as they stream in, JSONL/TSV lines
    written as they come; then the long texts hashed and the parquet file written from the batches.
    Returns its triplet ids per level (the pool the pseudo systems are drawn from) and its counts."""
    folder = staging / direction_code
    folder.mkdir(parents=True, exist_ok=True)
    jsonl = open(folder / "test.jsonl", "w", encoding="utf-8", newline="\n") if "jsonl" in formats else None
    tsv_fh = open(folder / "test.tsv", "w", encoding="utf-8", newline="") if "tsv" in formats else None
    try:
        table, levels, transplanted = _direction_table(rows, direction_code, digest, jsonl, tsv_fh)
    finally:
        for fh in (jsonl, tsv_fh):
            if fh:
                fh.close()
    writer = _RowGroupWriter(folder / "test.parquet", TRIPLET_SCHEMA)
    writer.write(table)
    writer.close()
    return {"levels": levels, "triplets": table.num_rows, "transplanted": transplanted}


def _direction_table(rows: Iterable[dict], direction_code: str, digest: _Digest, jsonl, tsv_fh):
    """The direction's rows as one Arrow table, fed to ``digest`` (the small fields as they stream in, the
    long texts after) and written to the JSONL and TSV text streams given; (table, triplet ids per level,
    transplanted count)."""
    tsv = _tsv_writer(tsv_fh) if tsv_fh else None
    levels: dict[int, list[str]] = {}
    batches: list[pa.RecordBatch] = []
    pending: list[dict] = []
    transplanted = 0
    small = _Digest.SMALL
    digest.begin(f"triplets {direction_code}")
    for row in rows:
        digest.item([row[n] for n in small])
        levels.setdefault(row["num_errors"], []).append(row["triplet_id"])
        if TRANSPLANTED_FLAG in row["flags"]:
            transplanted += 1
        if jsonl:
            jsonl.write(_jsonl_line(row))
        if tsv:
            tsv.writerow(_tsv_row(row))
        pending.append(row)
        if len(pending) >= TRIPLET_BATCH:
            batches.append(_triplet_table(pending).to_batches()[0])
            pending = []
    digest.end()
    if pending:
        batches.append(_triplet_table(pending).to_batches()[0])
    table = pa.Table.from_batches(batches, schema=TRIPLET_SCHEMA).combine_chunks()
    del batches, pending
    digest.texts(table)
    return table, levels, transplanted


class _HashSink(io.RawIOBase):
    """A file that keeps only the sha256 of what is written to it."""

    def __init__(self):
        super().__init__()
        self.sha = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.sha.update(data)
        return len(data)


def direction_expected(rows: Iterable[dict], direction_code: str, formats) -> dict:
    """What a staged direction of ``rows`` holds, computed without writing it: the parquet file's table, the
    sha256 of its spool (its share of the content hash) and of its JSONL/TSV files (encoded exactly as
    ``_write_direction`` writes them), its triplet ids per level and counts. What the platform checks a
    direction a release worker staged against (``staged_upload.staged_check``), from its own rows."""
    sinks = {fmt: _HashSink() for fmt in EXTRA_FORMATS if fmt in formats}
    texts = {
        fmt: io.TextIOWrapper(io.BufferedWriter(sink), encoding="utf-8", newline="\n" if fmt == "jsonl" else "")
        for fmt, sink in sinks.items()
    }
    spool = hashlib.sha256()
    try:
        table, levels, transplanted = _direction_table(
            rows, direction_code, _Digest(spool), texts.get("jsonl"), texts.get("tsv")
        )
    finally:
        for fh in texts.values():
            fh.close()  # flushes the last lines into the hash
    return {
        "table": table,
        "levels": _levels_json(levels),
        "digest": spool.hexdigest(),
        "triplets": table.num_rows,
        "transplanted": transplanted,
        "files": {f"{direction_code}/test.{fmt}": sink.sha.hexdigest() for fmt, sink in sinks.items()},
    }


# ---- a release staged one direction at a time (a Celery task each) -------------------------------------


def direction_files(direction_code: str, formats) -> list[str]:
    return [f"{direction_code}/test.parquet"] + [
        f"{direction_code}/test.{fmt}" for fmt in EXTRA_FORMATS if fmt in formats
    ]


def staged_names(direction_code: str, formats) -> list[str]:
    """What a staged direction is, staging-relative, in the order it is stored: its files, its spool, and
    its summary last (a summary present means the rest is complete)."""
    return [
        *direction_files(direction_code, formats),
        f"{SPOOL_DIR}/{direction_code}.bin",
        f"{SPOOL_DIR}/{direction_code}.json",
    ]


class StagedStore(Protocol):
    """Where a release's staged directions are kept, read by staging-relative name (``en-de/test.parquet``,
    ``.spool/en-de.bin``): a directory (``LocalStaged``) or object storage behind ``core.storage``.
    ``chunks`` raises ``FileNotFoundError`` for a name it does not hold."""

    def chunks(self, name: str) -> Iterator[bytes]: ...


class LocalStaged:
    """A staging directory on this machine's file system as a ``StagedStore``."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def chunks(self, name: str) -> Iterator[bytes]:
        with open(self.root / name, "rb") as fh:
            yield from iter(lambda: fh.read(1 << 20), b"")


def _store(staging: str | Path | StagedStore) -> StagedStore:
    return LocalStaged(staging) if isinstance(staging, (str, Path)) else staging


def _stored_json(store: StagedStore, name: str):
    return json.loads(b"".join(store.chunks(name)).decode("utf-8"))


def _stored_sha256(store: StagedStore, name: str) -> str:
    h = hashlib.sha256()
    for chunk in store.chunks(name):
        h.update(chunk)
    return h.hexdigest()


def write_staged_direction(
    rows: Iterable[dict],
    direction_code: str,
    staging: str | Path,
    formats: tuple[str, ...] = (),
    stamp: dict | None = None,
) -> dict:
    """Write one direction of a staged release into ``staging`` (a directory every worker reaches: on several
    machines, a shared file system): its files, and in ``.spool/`` the exact bytes it contributes to the
    content hash and a summary (triplet ids per level, counts, the spool's sha256, ``stamp``: what it was
    built from). Written under temporary names and renamed, so a summary present means the files are
    complete. Returns the summary without the triplet ids."""
    staging = Path(staging)
    spool_dir = staging / SPOOL_DIR
    spool_dir.mkdir(parents=True, exist_ok=True)
    spool = _Spool(spool_dir / f"{direction_code}.bin.part")
    try:
        part = _write_direction(rows, direction_code, staging, formats, _Digest(spool))
    finally:
        digest = spool.close()
    os.replace(spool_dir / f"{direction_code}.bin.part", spool_dir / f"{direction_code}.bin")
    summary = {
        "direction": direction_code,
        "triplets": part["triplets"],
        "transplanted": part["transplanted"],
        "digest": digest,
        "formats": sorted(formats),
        "stamp": stamp or {},
        "files": {path: sha256_file(staging / path) for path in direction_files(direction_code, formats)},
    }
    _write_levels(spool_dir / f"{direction_code}.json", {**summary, "levels": _levels_json(part["levels"])})
    return summary


# what a killed process leaves beside a release's output directory ``NAME``: a direction being written
# (``.NAME.<direction>-<hex>``, StagedFiles.scratch), a release being assembled from object storage
# (``.NAME.finishing-<pid>``), uploads from release workers being unpacked (``.NAME.incoming``)
_SCRATCH_DIRECTION = r"[A-Za-z]{2,3}(?:[_-][A-Za-z]{4})?-[A-Za-z]{2,3}(?:[_-][A-Za-z]{4})?"


def scratch_folders(parent: str | Path, name: str) -> list[Path]:
    """The scratch folders of the release whose output directory is ``parent/name``, sorted: only names
    of those three patterns for that ``name`` (never another version's, nor its staging directory)."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(?:{_SCRATCH_DIRECTION}-[0-9a-f]{{12}}|finishing-[0-9]+|incoming)")
    parent = Path(parent)
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if pattern.fullmatch(p.name) and p.is_dir() and not p.is_symlink())


def staged_direction(staging: str | Path | StagedStore, direction_code: str) -> dict | None:
    """The summary of a staged direction when its files and spool are intact (their sha256 match what was
    recorded), else None: a direction that needs writing (again). ``staging``: the staging directory, or
    the ``StagedStore`` that keeps it (read streamed, one file at a time)."""
    store = _store(staging)
    try:
        summary = _stored_json(store, f"{SPOOL_DIR}/{direction_code}.json")
        if _stored_sha256(store, f"{SPOOL_DIR}/{direction_code}.bin") != summary.get("digest"):
            return None
        for rel, sha in summary.get("files", {}).items():
            if _stored_sha256(store, rel) != sha:
                return None
    except (OSError, ValueError, AttributeError):  # absent, unreadable, or not a summary
        return None
    summary.pop("levels", None)
    return summary


def finish_staged_release(
    content: ReleaseContent,
    staging: str | Path,
    out_dir: str | Path,
    formats: tuple[str, ...] = (),
    progress=None,
    expected_hash: str | None = None,
    store: StagedStore | None = None,
) -> dict:
    """Close a release whose directions ``write_staged_direction`` wrote into ``staging``: the content hash
    fed with the header, then every direction's spool in release order (the same byte stream as
    ``write_release``, so the same sha256), the pseudo systems drawn from the staged triplet ids, card and
    manifest; the staging directory then becomes ``out_dir`` (one rename; same file system). Refuses like
    ``write_release``; on refusal ``out_dir`` is untouched.

    ``store``: where the directions were staged when that is not ``staging`` (object storage): spools and
    summaries are read from it, and each direction's files are pulled into ``staging`` (an empty local
    folder beside ``out_dir``), checked against their summary's sha256, one direction at a time."""
    staging, out_dir = Path(staging), Path(out_dir)
    source = store if store is not None else LocalStaged(staging)
    step = progress or (lambda stage, pct: None)
    existing = _existing_hash(out_dir)
    digest = _begin_digest(content)
    for direction_code in sorted(content.directions):
        summary = _stored_json(source, f"{SPOOL_DIR}/{direction_code}.json")
        if summary["formats"] != sorted(formats):
            raise ReleaseConflict(
                f"{direction_code} was staged with formats {summary['formats']}, not {sorted(formats)}"
            )
        spool = hashlib.sha256()
        for chunk in source.chunks(f"{SPOOL_DIR}/{direction_code}.bin"):
            digest.h.update(chunk)
            spool.update(chunk)
        if spool.hexdigest() != summary["digest"]:
            raise ReleaseConflict(
                f"{direction_code}: its staged spool changed since it was written; write the direction again"
            )
        if store is not None:
            for rel, sha in sorted(summary["files"].items()):
                if _pull(store, rel, staging / rel) != sha:
                    raise ReleaseConflict(
                        f"{direction_code}: its staged {rel} changed since it was written; write the direction again"
                    )
        content.total_triplets += summary["triplets"]
        content.transplanted_triplets += summary["transplanted"]
    step("directions hashed", 62)
    return _finish(
        content, digest, staging, out_dir, formats, step, existing, expected_hash, rename=True, levels=source
    )


def _pull(store: StagedStore, name: str, target: Path) -> str:
    """Copy a stored file to ``target``, streamed; returns its sha256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    with open(target, "wb") as out:
        for chunk in store.chunks(name):
            h.update(chunk)
            out.write(chunk)
    return h.hexdigest()


def _write_systems(draws: Iterable[SystemDraw], path: Path, digest: _Digest, on_system, shortfalls: set[str]) -> int:
    """Pseudo systems one draw at a time: hashed, handed to ``on_system``, written in row groups."""
    writer = _RowGroupWriter(path, SYSTEM_SCHEMA)
    batch: list[SystemDraw] = []
    rows = count = 0
    for draw in draws:
        digest.item(_system_item(draw))
        shortfalls.update(draw.shortfalls)
        if on_system:
            on_system(draw)
        batch.append(draw)
        rows += draw.size
        count += 1
        if rows >= ROW_GROUP // 4:
            writer.write(_system_table(batch))
            batch, rows = [], 0
    if batch or count == 0:
        writer.write(_system_table(batch))
    writer.close()
    return count


def check_out_dir(out_dir: str | Path, *, name: str | None = None, version: str | None = None) -> None:
    """Refuse (``ReleaseConflict``) an output directory a release cannot be written into, before anything is
    staged: a path that is a file or lies under one, a directory that is not writable, a non-empty directory
    holding no release, or one holding another project's or version's release (one holding this version is
    compared by content hash when it is finished)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ReleaseConflict(f"{out_dir} is a file, not a directory; choose a new or empty directory")
    if _existing_hash(out_dir) is not None and (name, version) != (None, None):
        held = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
        if (held.get("name"), held.get("version")) != (name, version):
            raise ReleaseConflict(
                f"{out_dir} holds release {held.get('name')} {held.get('version')}, not {name} {version}; "
                "choose a new or empty directory"
            )
    ancestor = out_dir.parent  # the staging directory goes next to out_dir
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ReleaseConflict(f"{out_dir}: {ancestor} is a file, not a directory; choose another output directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ReleaseConflict(f"{out_dir}: {ancestor} is not writable; choose another output directory")


def _existing_hash(out_dir: Path) -> str | None:
    manifest = out_dir / "manifest.json"
    if not manifest.is_file():
        if out_dir.is_dir() and any(out_dir.iterdir()):
            raise ReleaseConflict(f"{out_dir} is not empty and holds no release manifest; choose an empty directory")
        return None
    try:
        return json.loads(manifest.read_text(encoding="utf-8"))["content_hash"]
    except (ValueError, KeyError) as exc:
        raise ReleaseConflict(f"{manifest} is unreadable ({exc}); refusing to overwrite") from None


def verify_release(out_dir: str | Path) -> list[str]:
    """Problems found comparing the files in ``out_dir`` with its manifest ([] when intact)."""
    out_dir = Path(out_dir)
    manifest = json.loads((out_dir / "manifest.json").read_text(encoding="utf-8"))
    problems = []
    for path, info in manifest["files"].items():
        f = out_dir / path
        if not f.is_file():
            problems.append(f"{path}: missing")
        elif sha256_file(f) != info["sha256"]:
            problems.append(f"{path}: sha256 differs from the manifest")
    return problems


# ---- dataset card --------------------------------------------------------------------------------------


def dataset_card(
    content: ReleaseContent, content_hash: str, canonical: list[str], hash_covers: str = HASH_COVERS
) -> str:
    """The release's README.md: the prose is the template ``dataset_card.md`` beside this module; this fills in
    the parts that come from the content (metadata, lists and the counts table)."""
    if content.agreement:
        agreement = "".join(f"- {key}: {_md(str(content.agreement[key]))}\n" for key in sorted(content.agreement))
    else:
        agreement = "Not available for this release (no per-reviewer decisions were recorded).\n"
    shortfalls = ""
    if content.shortfalls:
        shortfalls = (
            "Draws with fewer triplets than asked for (all available taken):\n\n"
            + "".join(f"- {_md(s)}\n" for s in content.shortfalls)
            + "\n"
        )
    return _card_template().substitute(
        metadata=yaml.safe_dump(_card_metadata(content), sort_keys=False, allow_unicode=True, width=1000),
        title=_md(content.title or content.name),
        version=_md(content.version),
        description=_md(content.description) + "\n\n" if content.description else "",
        content_hash=content_hash,
        hash_covers=hash_covers,
        first_direction=sorted(content.directions)[0] if content.directions else "en-de",
        transplanted_flag=TRANSPLANTED_FLAG,
        build="".join(f"- {key}: {_md(str(content.build[key]))}\n" for key in sorted(content.build)),
        counts_table=_counts_table(content.counts),
        transplanted_candidates=len(content.transplanted),
        transplanted_triplets=f"{content.transplanted_triplets:,}",
        excluded_candidates=len(content.excluded),
        agreement=agreement,
        human_annotations=_human_annotations(content.span_annotations),
        sampling_plan=json.dumps(content.sampling_plan, sort_keys=True, indent=2),
        shortfalls=shortfalls,
        files="".join(f"- `{path}`\n" for path in sorted(canonical)),
        license=content.license,
        citation=CITATION,
    )


def _card_metadata(content: ReleaseContent) -> dict:
    """The card's YAML header: Hugging Face's dataset metadata, one config per direction and file of rows."""
    configs = [
        {"config_name": d, "data_files": [{"split": "test", "path": f"{d}/test.parquet"}]}
        for d in sorted(content.directions)
    ]
    if content.span_annotations:
        configs.append(
            {"config_name": "span-annotations", "data_files": [{"split": "test", "path": SPAN_ANNOTATIONS_FILE}]}
        )
    configs += [
        {
            "config_name": "systems-monolingual",
            "data_files": [{"split": "test", "path": "systems/monolingual.parquet"}],
        },
        {
            "config_name": "systems-multilingual",
            "data_files": [{"split": "test", "path": "systems/multilingual.parquet"}],
        },
    ]
    return {
        "license": content.license,
        "language": [content.source_language, *content.target_languages],
        "multilinguality": ["translation"],
        "size_categories": [size_category(content.total_triplets)],
        "task_categories": ["translation"],
        "pretty_name": content.title or content.name,
        "tags": ["mt-evaluation", "mqm", "metric-benchmark", "xq-meval"],
        "configs": configs,
    }


def _human_annotations(rows: list[dict]) -> str:
    """The card's section on people's annotations: what the file holds and, per protocol, the mean score per
    number of injected errors (how people's scores follow the predetermined quality)."""
    if not rows:
        return ""
    by_protocol: dict[str, dict[int, list[float]]] = {}
    for row in rows:
        scores = by_protocol.setdefault(row["protocol"], {}).setdefault(row["num_errors"], [])
        if row["score"] is not None:
            scores.append(row["score"])
    levels = sorted({k for per_k in by_protocol.values() for k in per_k})
    table = [
        "| protocol | annotations | " + " | ".join(f"k={k}" for k in levels) + " |\n",
        "|---|---:|" + "---:|" * len(levels) + "\n",
    ]
    for protocol, per_k in sorted(by_protocol.items()):
        cells = [f"{sum(per_k[k]) / len(per_k[k]):.1f} ({len(per_k[k])})" if per_k.get(k) else "–" for k in levels]
        count = sum(1 for r in rows if r["protocol"] == protocol)
        table.append(f"| {_md(protocol)} | {count:,} | " + " | ".join(cells) + " |\n")
    return (
        "## Human error-span annotations\n\n"
        f"`{SPAN_ANNOTATIONS_FILE}` (config `span-annotations`): {len(rows):,} annotations of the triplets by people, "
        "one row per (triplet, annotator) with `triplet_id`, `direction`, `num_errors` (*k* of the triplet), `task` "
        "(the annotation campaign), `protocol` (`esa`: spans minor or major and a 0–100 score; `mqm`: spans with a "
        "category and a severity, score −(1·minor + 5·major + w·critical) floored at −25), `annotator` (a pseudonym, "
        "the same within a task), `score` and `spans`: `side` (`target`: the pseudo translation `mt`; `source`: "
        "`src`, an omission), `[start, end)` in characters, `severity`, `category` (MQM; empty for ESA), `origin` "
        "(`human`, or `metric` for an ESA-AI span kept or edited). Annotators whom an admin excluded and attention "
        "checks are left out.\n\n"
        "Mean score per number of injected errors *k* (annotations in brackets):\n\n" + "".join(table) + "\n"
    )


@functools.cache
def _card_template() -> string.Template:
    return string.Template((Path(__file__).parent / "dataset_card.md").read_text(encoding="utf-8"))


def _counts_table(counts: dict) -> str:
    """Pseudo translations per direction and level, "total (min–max per gold pair)" in each cell."""
    levels, rows = counts_table_rows(counts)
    lines = [
        "| direction | pairs | " + " | ".join(f"k={k}" for k in levels) + " | total |\n",
        "|---|---:|" + "---:|" * len(levels) + "---:|\n",
    ]
    for direction_code, row, level_cells in rows:
        cells = [f"{c['total']:,} ({c['min_per_pair']}–{c['max_per_pair']})" for c in level_cells]
        lines.append(
            f"| {direction_code} | {row['gold_pairs']} | "
            + " | ".join(cells)
            + f" | {row['total']:,} ({row['min_per_pair']}–{row['max_per_pair']}) |\n"
        )
    return "".join(lines)


def _md(text: str) -> str:
    """Text from the database in markdown: no raw HTML, no line breaks that would end a list item."""
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("\r", " ").replace("\n", " ")
