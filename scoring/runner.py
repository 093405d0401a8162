"""Scoring a release: one (metric, direction) at a time, in checkpointed chunks, into parquet files that
carry the metric's full signature.

Layout under the output directory (default ``<release>/scores``)::

    <metric>.parquet                 one row per triplet of every finished direction
    parts/<metric>/<direction>.parquet   the unit of work (one Celery task each)
    parts/<metric>/<direction>.chunks/   checkpoints of an unfinished direction
    summary.json                     per metric and direction: n, mean, mean by level, signature

A part or chunk whose recorded input hash and metric configuration match is reused, so re-running (or a
worker picking up a task a killed worker left) skips finished work. A metric with a step over every
direction (``MetricSpec.finalize_run``: AskQE's pooled decision) runs it when the metric's file is
assembled, and rewrites the parts it changes.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import statistics
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from scoring import __version__
from scoring.registry import Family, MetricError, MetricSpec, Segment, get_metric, route_options
from scoring.release import DirectionData, Release, open_release

META_KEY = b"xqmeval.scoring"
DEFAULT_CHUNK = 4096

Progress = Callable[[int, int], None]


@dataclass
class ScoreOptions:
    """What a run may configure; everything here that changes scores goes into the signature."""

    batch_size: int = 64
    device: str | None = None  # None: cuda when available, else cpu
    model: str | None = None  # overrides the metric's default model (a local dir or a Hub id)
    spm_model: str | None = None  # spBLEU's FLORES-200 SentencePiece file
    dtype: str | None = None  # float32 / float16 / bfloat16
    chunk_size: int = DEFAULT_CHUNK
    trust_remote_code: bool = False  # run Python code shipped with a checkpoint (OmniScore's legacy format)
    # ``--option`` values: KEY or METRIC:KEY -> value (scoring.registry.route_options sends each to its metrics)
    extra: dict[str, Any] = field(default_factory=dict)
    # LLM judges (family LLM only): model, base_url, backend, concurrency, rpm, max_usd, dry_run, cache_dir,
    # temperature, max_tokens, seed, structured, prompt_files (scoring.judges.engine.JudgeConfig).
    judge: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None  # first N triplets per direction, in release order

    def __post_init__(self) -> None:
        # 0 or less would score nothing (limit) or never advance (batch, chunk), and be recorded as done
        sizes = {"batch_size": self.batch_size, "chunk_size": self.chunk_size}
        if self.limit is not None:
            sizes["limit"] = self.limit
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise MetricError(f"{name.replace('_', '-')} must be a whole number of at least 1, got {value!r}")

    def per_metric(self, specs: list[MetricSpec]) -> dict[str, ScoreOptions]:
        """Each metric's options for a run of several: ``extra`` routed (``route_options``), the rest shared."""
        routed = route_options(specs, self.extra)
        return {spec.name: replace(self, extra=routed[spec.name]) for spec in specs}

    def for_metric(self, spec: MetricSpec | None = None, out: Path | None = None) -> dict[str, Any]:
        """The keyword arguments of ``spec.build``."""
        kw = {
            "batch_size": self.batch_size,
            "device": self.device,
            "model": self.model,
            "spm_model": self.spm_model,
            "dtype": self.dtype,
            **({"trust_remote_code": True} if self.trust_remote_code else {}),
            # one metric's share of the options; an option it does not take is an error here
            **(route_options([spec], self.extra)[spec.name] if spec is not None else self.extra),
        }
        if spec is not None and spec.family == Family.LLM:
            judge = dict(self.judge)
            if not judge.get("cache_dir") and out is not None:
                judge["cache_dir"] = str(Path(out) / ".judge-cache")  # a rerun into the same output is free
            kw["judge"] = judge
        return kw


def metric_slug(name: str) -> str:
    # chrf++ -> chrf++ is a legal file name, but keep names portable: '+' -> 'p'.
    return re.sub(r"[^A-Za-z0-9_.-]", lambda m: {"+": "p"}.get(m.group(0), "_"), name.lower())


def part_path(out: Path, metric: str, direction_code: str) -> Path:
    return out / "parts" / metric_slug(metric) / f"{direction_code}.parquet"


def _config_key(signature: dict[str, Any]) -> dict[str, Any]:
    # Batch size and device do not change scores (tested), so a resumed run may use others.
    return {k: v for k, v in signature.items() if k not in {"batch_size", "device", "created", "elapsed_s"}}


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta[META_KEY])
    except Exception:  # torn or foreign file: treat as not done
        return None


def _write_table(path: Path, columns: dict[str, list] | pa.Table, meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    table = columns if isinstance(columns, pa.Table) else pa.table(columns)
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode("utf-8")})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)  # atomic: readers see the old file or the whole new one


def _segments(data: DirectionData, lo: int, hi: int) -> list[Segment]:
    """Rows ``lo`` to ``hi`` of a direction as its scorer reads them (with the release columns it asked for)."""
    return [
        Segment(
            src=data.src[i],
            mt=data.mt[i],
            ref=data.ref[i],
            target_lang=data.target_lang,
            source_lang=data.source_lang,
            extra={c: data.extra[c][i] for c in data.extra} or None,
        )
        for i in range(lo, hi)
    ]


def _columns(data: DirectionData, lo: int, hi: int, scores: list[float], extras: dict[str, list]) -> dict[str, list]:
    cols: dict[str, list] = {
        "direction": [data.direction_code] * (hi - lo),
        "triplet_id": data.triplet_ids[lo:hi],
        "segment_id": [None if s is None else str(s) for s in data.segment_ids[lo:hi]],
        "num_errors": data.levels[lo:hi],
        "score": [None if s is None else float(s) for s in scores],  # None: the judge failed on this segment
    }
    for key, values in extras.items():
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, bool) for v in present):
            cols[key] = list(values)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present) and (present or not values):
            cols[key] = [None if v is None else float(v) for v in values]
        elif key in _TEXT_EXTRAS and all(isinstance(v, str) for v in present):
            cols[key] = list(values)
        else:
            cols[key] = [json.dumps(v, ensure_ascii=False) for v in values]
    return cols


# Extras kept as plain text (not JSON-encoded): judge answers, notes and errors people read.
_TEXT_EXTRAS = {"raw_answer", "note", "error", "decision", "backtranslation"}


def _concat(parts: list[dict[str, list]]) -> dict[str, list]:
    out: dict[str, list] = {}
    for p in parts:
        for k, v in p.items():
            out.setdefault(k, []).extend(v)
    return out


def _finished(done: dict | None, spec: MetricSpec, input_hash: str, sig: dict) -> bool:
    """The part on disk (its metadata ``done``) was scored from these inputs with this signature, and no
    segment of it is to be redone (the judge failed on none)."""
    return bool(
        done
        and done.get("input_hash") == input_hash
        and done.get("metric") == spec.name
        and not done.get("summary", {}).get("n_retry")
        and _config_key(done["signature"]) == _config_key(sig)
    )


def _direction_summary(spec: MetricSpec, scorer, direction_code: str, cols: dict, extra_meta: dict, timed) -> dict:
    """The part's summary: the score statistics, the speed (``timed``: segments, seconds), the segments to
    redo, the judge's accounting, and what the scorer's ``finalize`` added (its side tables apart)."""
    n, elapsed = timed
    summary = summarize(spec, direction_code, cols["score"], cols["num_errors"])
    summary["segments_per_s"] = round(n / elapsed, 2) if elapsed > 0 else None
    if "retryable" in cols:
        summary["n_retry"] = sum(1 for r in cols["retryable"] if r)
    judge = scorer.stats()
    if judge is not None:
        summary["judge"] = judge
    summary.update({k: v for k, v in extra_meta.items() if k != "tables"})
    return summary


def _drop_checkpoints(chunk_dir: Path) -> None:
    """A direction's chunk checkpoints, once its part is written."""
    if chunk_dir.exists():
        for f in chunk_dir.glob("*.parquet"):
            f.unlink()
        chunk_dir.rmdir()


def _score_chunks(
    spec: MetricSpec, scorer, data: DirectionData, chunk_dir: Path, chunk: int, inputs: tuple, progress
) -> list[dict[str, list]]:
    """The columns of each chunk of ``chunk`` rows: read back where a checkpoint of the same inputs (input hash,
    signature) holds it, else scored, and checkpointed where the direction has more than one chunk and none of
    the chunk's segments is to be redone."""
    input_hash, sig = inputs
    pieces: list[dict[str, list]] = []
    n = len(data)
    for index, lo in enumerate(range(0, n, chunk)):
        hi = min(n, lo + chunk)
        cpath = chunk_dir / f"{index:06d}.parquet"
        cmeta = _read_meta(cpath) if cpath.exists() else None
        if (
            cmeta
            and cmeta.get("input_hash") == input_hash
            and cmeta.get("range") == [lo, hi]
            and _config_key(cmeta["signature"]) == _config_key(sig)
        ):
            pieces.append(pq.read_table(cpath).to_pydict())
        else:
            cols = _score_chunk(spec, scorer, data, lo, hi)
            retry = any(cols.get("retryable") or [])
            if hi - lo < n and not retry:  # a single-chunk direction needs no checkpoint; a failed one is redone
                _write_table(cpath, cols, {"input_hash": input_hash, "range": [lo, hi], "signature": sig})
            pieces.append(cols)
        if progress:
            progress(hi, n)
    return pieces


def _score_chunk(spec: MetricSpec, scorer, data: DirectionData, lo: int, hi: int) -> dict[str, list]:
    """Rows ``lo`` to ``hi`` scored, as part columns; a scorer that returns too few scores or a non-finite one
    fails the direction."""
    result = scorer.score(_segments(data, lo, hi))
    if len(result.scores) != hi - lo:
        raise MetricError(f"{spec.name}: scorer returned {len(result.scores)} scores for {hi - lo} segments")
    # None is a segment the judge could not score (its extras say why); anything else must be finite.
    bad = [i for i, s in enumerate(result.scores) if s is not None and not math.isfinite(float(s))]
    if bad or (spec.family != Family.LLM and any(s is None for s in result.scores)):
        first = bad[0] if bad else result.scores.index(None)
        raise MetricError(f"{spec.name}: non-finite score for triplet {data.triplet_ids[lo + first]!r}")
    return _columns(data, lo, hi, result.scores, result.extras)


def score_direction(
    release: Release,
    metric: str | MetricSpec,
    direction_code: str,
    out: Path | None = None,
    options: ScoreOptions | None = None,
    progress: Progress | None = None,
    scorer=None,
    assemble: bool = True,
) -> dict[str, Any]:
    """Score one direction with one metric; returns the part's summary. Idempotent and resumable."""
    spec = get_metric(metric) if isinstance(metric, str) else metric
    options = options or ScoreOptions()
    out = Path(out) if out else release.root / "scores"
    # Building a scorer resolves its model and tokenizer but loads no weights (that happens on the first
    # batch), so comparing signatures to decide what is finished is cheap.
    scorer = scorer or spec.build(**options.for_metric(spec, out))
    wanted = scorer.wanted_columns()
    data = release.load(direction_code, extra_columns=wanted)
    if options.limit is not None:
        data = data.head(options.limit)
    input_hash = data.input_hash(wanted)
    target = part_path(out, spec.name, direction_code)

    done = _read_meta(target) if target.exists() else None
    sig = scorer.signature(data.target_lang)
    if _finished(done, spec, input_hash, sig):
        if progress:
            progress(len(data), len(data))
        if assemble:
            _assemble(out, spec.name, release_directions=release.directions())
        return {**done["summary"], "skipped": True}

    scorer.reset_stats()  # judge accounting per direction
    chunk_dir = target.with_suffix(".chunks")
    started = time.perf_counter()
    pieces = _score_chunks(spec, scorer, data, chunk_dir, max(1, options.chunk_size), (input_hash, sig), progress)
    elapsed = time.perf_counter() - started
    cols = _concat(pieces) if pieces else _columns(data, 0, 0, [], {})
    extra_meta = scorer.finalize(direction_code, cols, data)
    summary = _direction_summary(spec, scorer, direction_code, cols, extra_meta, (len(data), elapsed))
    meta = {
        "metric": spec.name,
        "spec": spec.describe(),
        "signature": sig,
        "input_hash": input_hash,
        "release": {"root": str(release.root), "version": release.version},
        "summary": summary,
        "scoring_version": __version__,
        "tables": extra_meta.get("tables", {}),
    }
    with _locked(out):  # not while another worker's run-wide step reads and rewrites this part
        _write_table(target, cols, meta)
    _drop_checkpoints(chunk_dir)
    if assemble:  # a worker finishing one direction; a whole-release run assembles once at the end
        _assemble(out, spec.name, release_directions=release.directions())
        summary = (_read_meta(target) or meta)["summary"]  # with what a run-wide step (finalize_run) set
    return {**summary, "skipped": False}


def score_task(
    release_dir: str,
    metric: str,
    direction_code: str,
    out_dir: str | None = None,
    options: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """One (metric, direction) as a scoring task names it (``options``: a task's options, ``extra`` and
    ``judge`` included), on a release directory this process reads, into ``out_dir`` (default
    ``RELEASE/scores``); returns the part's summary. What the platform runs in-process when it has no broker."""
    spec = get_metric(metric)
    options = dict(options or {})
    extra = options.pop("extra", {}) or {}
    opts = ScoreOptions(**options, extra=extra)
    release = open_release(release_dir)
    out = Path(out_dir) if out_dir else release.root / "scores"
    scorer = spec.build(**opts.for_metric(spec, out))
    try:
        return score_direction(release, spec, direction_code, out, opts, progress, scorer=scorer)
    finally:
        scorer.close()


def summarize(spec: MetricSpec, direction_code: str, scores: list[float], levels: list) -> dict[str, Any]:
    by_level: dict[str, list[float]] = {}
    for s, k in zip(scores, levels):
        if k is not None and s is not None:
            by_level.setdefault(str(k), []).append(s)
    n = len(scores)
    scores = [s for s in scores if s is not None]
    mean = statistics.fmean(scores) if scores else None
    return {
        "metric": spec.name,
        "direction": direction_code,
        "n": n,
        "n_scored": len(scores),
        "mean": mean,
        "mean_reported": None if mean is None else mean * spec.report_scale,
        "mean_by_level": {k: statistics.fmean(v) for k, v in sorted(by_level.items(), key=lambda kv: int(kv[0]))},
    }


@contextmanager
def _locked(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # workers finishing directions of one metric at once
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _assemble(out: Path, metric: str, *, release_directions: list[str] | None = None) -> None:
    """Refresh ``summary.json`` from the finished parts (their metadata only) and write ``<metric>.parquet``,
    all parts one after another. ``release_directions``: a worker that has just finished one direction
    writes the whole-metric file only once every direction of the release has its part; rewriting it after
    each of 200 directions would copy the release's scores 200 times over."""
    with _locked(out):
        part_dir = out / "parts" / metric_slug(metric)
        parts = sorted(part_dir.glob("*.parquet"))
        metas = [m for m in (_read_meta(p) for p in parts) if m]
        scored = {m["summary"]["direction"] for m in metas}
        complete = bool(parts) and (release_directions is None or scored >= set(release_directions))
        if complete and _finalize_run(metric, parts):
            metas = [m for m in (_read_meta(p) for p in parts) if m]
        if complete:
            meta = {
                "metric": metric,
                "spec": metas[0]["spec"] if metas else None,
                "signature": metas[0]["signature"] if metas else None,
                "directions": {m["summary"]["direction"]: m["signature"] for m in metas},
            }
            _write_parts(out / f"{metric_slug(metric)}.parquet", parts, meta)
            side: dict[str, list[dict]] = {}
            for m in metas:
                for name, rows in (m.get("tables") or {}).items():
                    side.setdefault(name, []).extend(rows)
            for name, rows in side.items():  # e.g. cef.reliability.parquet: judge reliability beside the scores
                if rows:
                    _write_table(
                        out / f"{metric_slug(metric)}.{name}.parquet",
                        pa.Table.from_pylist(rows).to_pydict(),
                        {"metric": metric, "table": name},
                    )
        summary_path = out / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"metrics": {}}
        summary["scoring_version"] = __version__
        summary["metrics"][metric] = {
            "spec": metas[0]["spec"] if metas else None,
            "directions": {m["summary"]["direction"]: {**m["summary"], "signature": m["signature"]} for m in metas},
        }
        tmp = summary_path.with_name(f".summary.json.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, summary_path)


def _finalize_run(metric: str, parts: list[Path]) -> bool:
    """The metric's step over every direction of the run (``MetricSpec.finalize_run``, AskQE's pooled GMM),
    once per group of parts scored with one signature; a part whose columns or summary it changes is
    rewritten in place (atomically, under the caller's lock). The same scores give the same parts, so a
    rerun or a resumed run rewrites nothing. Returns whether any part was rewritten."""
    spec = get_metric(metric)
    if spec.finalize_run is None:
        return False
    groups: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for path in parts:
        meta = _read_meta(path)
        if meta:
            groups.setdefault(json.dumps(_config_key(meta["signature"]), sort_keys=True), []).append((path, meta))
    changed = False
    for members in groups.values():
        options = members[0][1]["signature"].get("options") or {}
        scores = {
            m["summary"]["direction"]: pq.read_table(p, columns=["score"]).column("score").to_pylist()
            for p, m in members
        }
        columns = {}  # the other columns the step reads (``finalize_reads``), where a part has them
        for p, m in members:
            names = [c for c in spec.finalize_reads if c in pq.read_schema(p).names]
            if names:
                table = pq.read_table(p, columns=names)
                columns[m["summary"]["direction"]] = {c: table.column(c).to_pylist() for c in names}
        updates = spec.finalize_run(options, scores, columns)
        for path, meta in members:
            update = updates.get(meta["summary"]["direction"])
            if not update:
                continue
            columns, entries = update
            table = pq.read_table(path)
            same = all(
                name in table.column_names and table.column(name).to_pylist() == values
                for name, values in columns.items()
            ) and all(meta["summary"].get(k) == v for k, v in entries.items())
            if same:
                continue
            for name, values in columns.items():
                column = pa.array(values)  # typed as a fresh part would be (all None: null)
                if name in table.column_names:
                    table = table.set_column(table.column_names.index(name), name, column)
                else:
                    table = table.append_column(name, column)
            meta = {**meta, "summary": {**meta["summary"], **entries}}
            _write_table(path, table.replace_schema_metadata(None), meta)
            changed = True
    return changed


def _write_parts(path: Path, parts: list[Path], meta: dict[str, Any]) -> None:
    """Concatenate part files into ``path`` one part at a time (memory: one direction, not the release).
    Parts whose extras differ are aligned on the union of their columns (absent ones null, types promoted),
    as ``pa.concat_tables(promote_options="default")`` would; written atomically."""
    schema = pa.unify_schemas([pq.read_schema(p).remove_metadata() for p in parts], promote_options="default")
    schema = schema.with_metadata({META_KEY: json.dumps(meta, sort_keys=True).encode("utf-8")})
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with pq.ParquetWriter(tmp, schema) as writer:
        for part in parts:
            table = pq.read_table(part)
            columns = [
                table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
                for f in schema
            ]
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))
    os.replace(tmp, path)


def _side_by_side(spec: MetricSpec, options: ScoreOptions) -> bool:
    """An LLM judge on an endpoint (not an in-process engine, not a dry run): scored side by side with the
    run's other such judges, in the endpoint's one in-flight window (``scoring.judges.backends``)."""
    judge = options.judge or {}
    return (
        spec.family == Family.LLM
        and str(judge.get("backend") or "openai") == "openai"
        and str(judge.get("dry_run", False)).lower() not in ("true", "1", "yes")
    )


def _score_metric(
    release: Release, spec: MetricSpec, scorer, wanted: list[str], out: Path, options: ScoreOptions, progress_factory
) -> list[dict[str, Any]]:
    """One metric of a release run: its ``wanted`` directions in order, the scorer closed after each, then its
    parts assembled. Returns the directions' summaries, with what the run-wide step (``finalize_run``) added
    to the parts'."""
    results = []
    for direction_code in wanted:
        total = release.count(direction_code)
        if options.limit is not None:
            total = min(total, options.limit)
        progress = progress_factory(spec.name, direction_code, total) if progress_factory else None
        try:
            summary = score_direction(
                release, spec, direction_code, out, options, progress, scorer=scorer, assemble=False
            )
        finally:
            scorer.close()
        results.append(summary)
    _assemble(out, spec.name)
    for summary in results:
        meta = _read_meta(part_path(out, spec.name, summary["direction"]))
        if meta:
            summary.update(meta["summary"])
    return results


def score_release(
    where: str | Path,
    metrics: Iterable[str],
    out: Path | None = None,
    directions: Iterable[str] | None = None,
    options: ScoreOptions | None = None,
    progress_factory: Callable[[str, str, int], Progress] | None = None,
) -> list[dict[str, Any]]:
    """Score every wanted direction with every metric; returns the directions' summaries, metric by metric.

    Metrics run one after another, except LLM judges on an endpoint: those run side by side (a thread each,
    every one with its directions in order) and share the endpoint's in-flight window, so that while one
    waits at a stage boundary (its questions before its answers) the others' requests keep the endpoint
    busy. Their scores are the same either way (tested); only the wall time differs."""
    release = open_release(where)
    out = Path(out) if out else release.root / "scores"
    wanted = list(directions) if directions else release.directions()
    specs = [get_metric(name) for name in metrics]
    own = (options or ScoreOptions()).per_metric(specs)  # every option checked before any model loads

    def run_metric(spec: MetricSpec, scorer) -> list[dict[str, Any]]:
        return _score_metric(release, spec, scorer, wanted, out, own[spec.name], progress_factory)

    by_metric: dict[str, list[dict[str, Any]]] = {}
    together = [spec for spec in specs if _side_by_side(spec, own[spec.name])]
    for spec in specs:
        if spec.name in by_metric:
            continue
        if spec not in together:
            # one model load per metric
            by_metric[spec.name] = run_metric(spec, spec.build(**own[spec.name].for_metric(spec, out)))
            continue
        # the judges side by side, at the place of the first; built here, so that a bad option fails first
        scorers = {s.name: s.build(**own[s.name].for_metric(s, out)) for s in together}
        with ThreadPoolExecutor(max_workers=len(together), thread_name_prefix="judge-metric") as pool:
            jobs = {s.name: pool.submit(run_metric, s, scorers[s.name]) for s in together}
        for s in together:  # every judge ran to its end; the first failure, in the run's order, is raised
            error = jobs[s.name].exception()
            if error is not None:
                raise error
            by_metric[s.name] = jobs[s.name].result()
    return [summary for spec in specs for summary in by_metric[spec.name]]


def dry_run_release(
    where: str | Path,
    metrics: Iterable[str],
    out: Path | None = None,
    directions: Iterable[str] | None = None,
    options: ScoreOptions | None = None,
) -> list[dict[str, Any]]:
    """What an LLM-judge run would send, without sending or writing anything: calls (cache hits apart),
    estimated tokens and the cost bound, per metric and direction. Later pipeline stages are planned on
    the answers of the offline stub judge (scoring.judges.stub), so their counts are estimates."""
    release = open_release(where)
    out = Path(out) if out else release.root / "scores"
    options = options or ScoreOptions()
    wanted = list(directions) if directions else release.directions()
    plans = []
    specs = [get_metric(name) for name in metrics]
    own = options.per_metric(specs)
    for spec in specs:
        if spec.family != Family.LLM:
            continue
        kw = own[spec.name].for_metric(spec, out)
        kw["judge"] = {**kw["judge"], "dry_run": True}
        scorer = spec.build(**kw)
        for direction_code in wanted:
            data = release.load(direction_code, extra_columns=scorer.wanted_columns())
            if options.limit is not None:
                data = data.head(options.limit)
            scorer.reset_stats()
            segments = _segments(data, 0, len(data))
            scorer.score(segments)
            stats = scorer.stats()
            plans.append({"metric": spec.name, "direction": direction_code, "triplets": len(data), **stats})
        scorer.close()
    return plans
