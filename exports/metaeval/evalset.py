"""mt-metrics-eval's ``EvalSet`` directory layout, written and read (pure Python, no Django).

Layout under ``ROOT/NAME`` for one language pair ``LP`` (mt-metrics-eval README, "File organization"):

- ``documents/LP.docs``: ``domain doc`` per segment;
- ``sources/LP.txt``, ``references/LP.REF.txt``: one segment per line;
- ``system-outputs/LP/SYSTEM.txt``: one line per segment;
- ``human-scores/LP.SCORER.LEVEL.score`` and ``metric-scores/LP/METRIC-REF.LEVEL.score``: ``system score`` per
  line, one line per segment (``seg``) or one per system (``sys``); a human score may be ``None``;
- ``human-scores/LP.NAME.seg.rating``: error spans, ``system<TAB>{"errors": [...]}<TAB>rater`` per segment, or
  ``system<TAB>None`` for a segment without a rating (``ratings.py``'s ``ReadRatingFile``); an error is
  ``{"start", "end", "category", "severity", "score", "is_source_error"}`` in characters of the output (of the
  source when ``is_source_error``).

How a release maps onto it (``from_triplets``): a segment is a triplet (its source, its reference, its pseudo
translation); the system ``triplets`` translates every segment and its human segment score is the predetermined
quality −5·k, so its segment-level correlation is the triplet-level statistic. Each pseudo system translates its
own triplets; elsewhere its output is empty and its human score ``None`` (mt-metrics-eval drops those items),
and its metric score 0 there, since metric files may not hold ``None`` (the items are dropped all the same). Its
system-level scores are the predetermined quality and the metric's mean over its triplets.

People's scores (``human_ratings``: ESA, MQM) are further human scorers beside ``xqm``: a triplet's segment score
is the mean over its raters (``None`` where nobody rated it), a system's the mean of its rated segments (``None``
where none is). Their error spans go into ratings files, one rating per file and segment: the raters of a
triplet in the order of their ids, the first in ``LP.esa.seg.rating``, the second in ``LP.esa.2.seg.rating``
and so on (mt-metrics-eval keeps one rating per segment and name; its rating names may hold dots).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from core.corpus.domain import DEFAULT_LIMITS, Limits, text_length_problem
from core.domain.errors import Invalid

HUMAN_SCORER = "xqm"  # the predetermined quality; mt-metrics-eval's std_gold at seg and sys level
REFERENCE = "refA"
ALL_TRIPLETS = "triplets"
LEVELS = ("seg", "sys")
MAX_LINES = 5_000_000  # any one file: bounds what an import reads
MAX_RATING_CHARS = 1_000_000  # one rating line
RATING_LINE_LIMITS = dataclasses.replace(DEFAULT_LIMITS, segment_chars=MAX_RATING_CHARS + 1_000)
MAX_RATING_ERRORS = 10_000
_SCORER = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_RATER = re.compile(r"[^\s]{1,100}")


class EvalSetError(Invalid, ValueError):
    code = "evalset_invalid"


@dataclass
class EvalSet:
    name: str
    lp: str
    sources: list[str]
    references: dict[str, list[str]]
    outputs: dict[str, list[str]]
    documents: list[tuple[str, str]] = field(default_factory=list)
    human: dict[tuple[str, str], dict[str, list[float | None]]] = field(default_factory=dict)  # (scorer, level)
    metrics: dict[tuple[str, str], dict[str, list[float]]] = field(default_factory=dict)  # (metric-ref, level)
    # rating name -> system -> per segment: {"errors": [...]} or None, and the rater of each
    ratings: dict[str, dict[str, list[dict | None]]] = field(default_factory=dict)
    rater_ids: dict[str, dict[str, list[str | None]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Triplet:
    id: str
    source: str
    reference: str
    translation: str
    level: int


@dataclass(frozen=True)
class System:
    name: str
    human_score: float
    triplet_ids: Sequence[str]


@dataclass(frozen=True)
class RatingError:
    """An error span as mt-metrics-eval's ``ratings.Error``: ``[start, end)`` characters of the output (of the
    source when ``is_source_error``)."""

    start: int
    end: int
    severity: str | None = None
    category: str | None = None
    score: float | None = None
    is_source_error: bool = False

    def as_dict(self) -> dict:
        # the key order of mt-metrics-eval's rating files: category before severity
        return {key: getattr(self, key) for key in ("start", "end", "category", "severity", "score", "is_source_error")}


@dataclass(frozen=True)
class HumanRating:
    """One rater's annotation of one triplet: the segment score and its error spans."""

    triplet_id: str
    rater: str
    score: float | None
    errors: Sequence[RatingError] = ()


def _line(text: str, what: str) -> str:
    if "\n" in text or "\r" in text:
        raise EvalSetError(f"{what}: a line break cannot be written to a one-segment-per-line file")
    return text


def from_triplets(
    name: str,
    lp: str,
    triplets: Sequence[Triplet],
    systems: Sequence[System],
    metric_scores: dict[str, dict[str, float]],
    human_ratings: dict[str, Sequence[HumanRating]] | None = None,
) -> EvalSet:
    """An EvalSet of one direction: a segment per triplet, the ``triplets`` system and each pseudo system, the
    metrics' seg and sys scores (metric names without a reference suffix get ``-refA``), and per human scorer
    of ``human_ratings`` (``esa``, ``mqm``) its seg and sys scores and ratings files."""
    position = {t.id: i for i, t in enumerate(triplets)}
    n = len(triplets)
    outputs = {ALL_TRIPLETS: [_line(t.translation, f"triplet {t.id}") for t in triplets]}
    human_seg = {ALL_TRIPLETS: [-5.0 * t.level for t in triplets]}
    human_sys = {ALL_TRIPLETS: [sum(human_seg[ALL_TRIPLETS]) / n]}
    members: dict[str, list[int]] = {ALL_TRIPLETS: list(range(n))}
    for system in systems:
        if not system.name or any(c.isspace() for c in system.name) or "/" in system.name:
            raise EvalSetError(f"system {system.name!r}: a system name must be a file name without spaces")
        if system.name in outputs or system.name == REFERENCE:
            raise EvalSetError(f"system {system.name}: the name is taken")
        try:
            rows = [position[t] for t in system.triplet_ids]
        except KeyError as exc:
            raise EvalSetError(f"system {system.name}: triplet {exc.args[0]} is not in the direction") from None
        members[system.name] = rows
        out, seg = [""] * n, [None] * n
        for i in rows:
            out[i], seg[i] = outputs[ALL_TRIPLETS][i], human_seg[ALL_TRIPLETS][i]
        outputs[system.name], human_seg[system.name] = out, seg
        human_sys[system.name] = [system.human_score]
    metrics = {}
    for metric, scores in metric_scores.items():
        # NAME-REF: the reference a metric used is the file name's last dash-separated part
        key = metric if metric.endswith((f"-{REFERENCE}", "-src")) else f"{metric}-{REFERENCE}"
        seg_scores, sys_scores = {}, {}
        for system, rows in members.items():
            values = [0.0] * n
            for i in rows:
                try:
                    values[i] = float(scores[triplets[i].id])
                except KeyError:
                    raise EvalSetError(f"metric {metric}: triplet {triplets[i].id} has no score") from None
            seg_scores[system] = values
            sys_scores[system] = [sum(values[i] for i in rows) / len(rows)]
        metrics[(key, "seg")], metrics[(key, "sys")] = seg_scores, sys_scores
    evs = EvalSet(
        name,
        lp,
        [_line(t.source, f"triplet {t.id}") for t in triplets],
        {REFERENCE: [_line(t.reference, f"triplet {t.id}") for t in triplets]},
        outputs,
        [("xqmeval", t.id.replace(" ", "_")) for t in triplets],
        {(HUMAN_SCORER, "seg"): human_seg, (HUMAN_SCORER, "sys"): human_sys},
        metrics,
    )
    for scorer, ratings in (human_ratings or {}).items():
        _add_people(evs, scorer, ratings, position, members, triplets)
    return evs


def _add_people(
    evs: EvalSet,
    scorer: str,
    ratings: Sequence[HumanRating],
    position: dict[str, int],
    members: dict[str, list[int]],
    triplets: Sequence[Triplet],
) -> None:
    """People's scores and spans of one scorer, on the rows of each system (see the module's docstring)."""
    if not _SCORER.fullmatch(scorer) or scorer == HUMAN_SCORER:
        raise EvalSetError(f"human scorer {scorer!r}: a lower-case name without dots, other than {HUMAN_SCORER}")
    n = len(triplets)
    per_row: list[list[HumanRating]] = [[] for _ in range(n)]
    for r in ratings:
        if r.triplet_id not in position:
            raise EvalSetError(f"{scorer} rating by {r.rater}: triplet {r.triplet_id} is not in the direction")
        if not _RATER.fullmatch(r.rater):
            raise EvalSetError(f"{scorer} rating of {r.triplet_id}: rater {r.rater!r} must be one word")
        if r.score is not None and not math.isfinite(r.score):
            raise EvalSetError(f"{scorer} rating of {r.triplet_id} by {r.rater}: the score is not finite")
        row = per_row[position[r.triplet_id]]
        if any(other.rater == r.rater for other in row):
            raise EvalSetError(f"{scorer}: triplet {r.triplet_id} is rated twice by {r.rater}")
        row.append(r)
    for row, t in zip(per_row, triplets):
        row.sort(key=lambda r: r.rater)
        for r in row:
            for e in r.errors:
                text = t.source if e.is_source_error else t.translation
                if not 0 <= e.start < e.end <= len(text):
                    raise EvalSetError(
                        f"{scorer} rating of {t.id} by {r.rater}: span [{e.start}, {e.end}) lies outside the "
                        f"{'source' if e.is_source_error else 'translation'} of {len(text)} characters"
                    )
    seg_all: list[float | None] = []
    for row in per_row:
        scores = [r.score for r in row if r.score is not None]
        seg_all.append(sum(scores) / len(scores) if scores else None)
    seg, sys_ = {}, {}
    slots = max((len(row) for row in per_row), default=0)
    rating_files = {(scorer if i == 0 else f"{scorer}.{i + 1}"): ({}, {}) for i in range(slots)}
    for system, rows in members.items():
        values: list[float | None] = [None] * n
        for i in rows:
            values[i] = seg_all[i]
        seg[system] = values
        rated = [values[i] for i in rows if values[i] is not None]
        sys_[system] = [sum(rated) / len(rated) if rated else None]
        for slot, (by_system, raters) in enumerate(rating_files.values()):
            by_system[system], raters[system] = [None] * n, [None] * n
            for i in rows:
                if slot < len(per_row[i]):
                    r = per_row[i][slot]
                    by_system[system][i] = {"errors": [e.as_dict() for e in r.errors]}
                    raters[system][i] = r.rater
    evs.human[(scorer, "seg")], evs.human[(scorer, "sys")] = seg, sys_
    for rating_name, (by_system, raters) in rating_files.items():
        evs.ratings[rating_name], evs.rater_ids[rating_name] = by_system, raters


def _write_lines(path: str, lines: Iterable[str]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in lines)


def _score_lines(scores: dict[str, list]) -> Iterable[str]:
    for system in sorted(scores):
        for value in scores[system]:
            yield f"{system}\t{'None' if value is None else repr(float(value))}"


def write(evalset: EvalSet, root: str) -> str:
    """Write ``root/NAME`` in mt-metrics-eval's layout; returns that directory."""
    d, lp = os.path.join(root, evalset.name), evalset.lp
    _write_lines(os.path.join(d, "documents", f"{lp}.docs"), (f"{dom} {doc}" for dom, doc in evalset.documents))
    _write_lines(os.path.join(d, "sources", f"{lp}.txt"), evalset.sources)
    for ref, lines in evalset.references.items():
        _write_lines(os.path.join(d, "references", f"{lp}.{ref}.txt"), lines)
    for system, lines in evalset.outputs.items():
        _write_lines(os.path.join(d, "system-outputs", lp, f"{system}.txt"), lines)
    for (scorer, level), scores in evalset.human.items():
        _write_lines(os.path.join(d, "human-scores", f"{lp}.{scorer}.{level}.score"), _score_lines(scores))
    for (metric, level), scores in evalset.metrics.items():
        _write_lines(os.path.join(d, "metric-scores", lp, f"{metric}.{level}.score"), _score_lines(scores))
    for rating_name, by_system in evalset.ratings.items():
        path = os.path.join(d, "human-scores", f"{lp}.{rating_name}.seg.rating")
        _write_lines(path, _rating_lines(by_system, evalset.rater_ids[rating_name]))
    return d


def _rating_lines(by_system: dict[str, list[dict | None]], raters: dict[str, list[str | None]]) -> Iterable[str]:
    # as ratings.WriteRatingFile: systems sorted, a rated segment as JSON (one line: json escapes tabs and
    # line breaks inside strings) and its rater
    for system in sorted(by_system):
        for rating, rater in zip(by_system[system], raters[system]):
            if rating is None:
                yield f"{system}\tNone"
            else:
                yield f"{system}\t{json.dumps(rating, sort_keys=True)}\t{rater}"


def _read_lines(path: str, limits: Limits = DEFAULT_LIMITS) -> list[str]:
    """A file's lines: at most ``MAX_LINES``, each within the text limit of every upload (#48.3), read a
    bounded piece at a time so one endless line is refused without being held."""
    lines = []
    longest = limits.segment_chars + 1  # the newline
    with open(path, encoding="utf-8") as f:
        for number in itertools.count(1):
            line = f.readline(longest + 1)
            if not line:
                break
            if number > MAX_LINES:
                raise EvalSetError(f"{path}: more than {MAX_LINES} lines")
            text = line.rstrip("\n")
            problem = text_length_problem(text, limits)
            if problem:
                raise EvalSetError(f"{path}, line {number}: {problem}")
            lines.append(text)
    return lines


def _read_scores(path: str, *, allow_none: bool, expected: int, systems: set[str]) -> dict[str, list]:
    scores: dict[str, list] = {}
    for number, line in enumerate(_read_lines(path), 1):
        parts = line.split()
        if len(parts) != 2:
            raise EvalSetError(f"{path}, line {number}: expected 'SYSTEM SCORE'")
        system, text = parts
        if system not in systems:
            raise EvalSetError(f"{path}, line {number}: unknown system {system!r}")
        if text == "None" and allow_none:
            value = None
        else:
            try:
                value = float(text)
            except ValueError:
                raise EvalSetError(f"{path}, line {number}: {text!r} is not a score") from None
            if not math.isfinite(value):
                raise EvalSetError(f"{path}, line {number}: {text!r} is not a finite score")
        scores.setdefault(system, []).append(value)
    for system, values in scores.items():
        if len(values) != expected:
            raise EvalSetError(f"{path}: system {system} has {len(values)} scores, expected {expected}")
    return scores


def read(root: str, name: str, lp: str, limits: Limits = DEFAULT_LIMITS) -> EvalSet:
    """Read ``root/NAME`` for ``lp`` (seg and sys scores; other levels are ignored), checking every file; an
    error names the file and line."""
    d = os.path.join(root, name)
    if not os.path.isdir(d):
        raise EvalSetError(f"{d}: no such EvalSet directory")
    src_path = os.path.join(d, "sources", f"{lp}.txt")
    if not os.path.exists(src_path):
        raise EvalSetError(f"{src_path}: missing")
    sources = _read_lines(src_path, limits)
    n = len(sources)

    def listing(sub: str, prefix: str, suffix: str) -> list[tuple[str, str]]:
        folder = os.path.join(d, sub)
        if not os.path.isdir(folder):
            return []
        return sorted(
            (f[len(prefix) : -len(suffix)], os.path.join(folder, f))
            for f in os.listdir(folder)
            if f.startswith(prefix) and f.endswith(suffix) and len(f) > len(prefix) + len(suffix)
        )

    def same_length(path: str, lines: list[str]) -> list[str]:
        if len(lines) != n:
            raise EvalSetError(f"{path}: {len(lines)} lines for {n} source segments")
        return lines

    references = {ref: same_length(p, _read_lines(p, limits)) for ref, p in listing("references", f"{lp}.", ".txt")}
    outputs = {
        s: same_length(p, _read_lines(p, limits)) for s, p in listing(os.path.join("system-outputs", lp), "", ".txt")
    }
    if not outputs:
        raise EvalSetError(f"{os.path.join(d, 'system-outputs', lp)}: no system outputs")
    systems = set(outputs)
    docs_path = os.path.join(d, "documents", f"{lp}.docs")
    documents = []
    if os.path.exists(docs_path):
        for number, line in enumerate(same_length(docs_path, _read_lines(docs_path)), 1):
            parts = line.split()
            if len(parts) != 2:
                raise EvalSetError(f"{docs_path}, line {number}: expected 'DOMAIN DOC'")
            documents.append((parts[0], parts[1]))
    expected = {"seg": n, "sys": 1}
    human = {}
    for stem, path in listing("human-scores", f"{lp}.", ".score"):
        scorer, _, level = stem.rpartition(".")
        if level in expected and scorer:
            human[(scorer, level)] = _read_scores(path, allow_none=True, expected=expected[level], systems=systems)
    metrics = {}
    for stem, path in listing(os.path.join("metric-scores", lp), "", ".score"):
        metric, _, level = stem.rpartition(".")
        if level in expected and metric:
            metrics[(metric, level)] = _read_scores(path, allow_none=False, expected=expected[level], systems=systems)
    if not human:
        raise EvalSetError(f"{os.path.join(d, 'human-scores')}: no human seg or sys scores for {lp}")
    evs = EvalSet(name, lp, sources, references, outputs, documents, human, metrics)
    for rating_name, path in listing("human-scores", f"{lp}.", ".seg.rating"):
        evs.ratings[rating_name], evs.rater_ids[rating_name] = _read_ratings(path, expected=n, systems=systems)
    return evs


_ERROR_FIELDS = {"start": int, "end": int, "category": str, "severity": str, "score": float, "is_source_error": bool}


def _field_ok(key: str, kind: type, value: object) -> bool:
    if value is None:  # dacite takes None where the field is optional
        return key in ("category", "severity", "score")
    if isinstance(value, bool):
        return kind is bool
    return isinstance(value, kind) or (kind is float and isinstance(value, int))


def _rating(text: str, where: str) -> dict:
    if len(text) > MAX_RATING_CHARS:
        raise EvalSetError(f"{where}: a rating of more than {MAX_RATING_CHARS} characters")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise EvalSetError(f"{where}: not JSON ({exc.msg})") from None
    errors = value.get("errors") if isinstance(value, dict) else None
    if not isinstance(errors, list) or set(value) != {"errors"}:
        raise EvalSetError(f"{where}: a rating is an object with one key, errors, a list")
    if len(errors) > MAX_RATING_ERRORS:
        raise EvalSetError(f"{where}: more than {MAX_RATING_ERRORS} errors")
    for number, error in enumerate(errors, 1):
        if not isinstance(error, dict) or not {"start", "end"} <= set(error) <= set(_ERROR_FIELDS):
            raise EvalSetError(
                f"{where}, error {number}: an object with start, end and optionally {', '.join(list(_ERROR_FIELDS)[2:])}"
            )
        for key, kind in _ERROR_FIELDS.items():
            if key in error and not _field_ok(key, kind, error[key]):
                raise EvalSetError(f"{where}, error {number}: {key} must be {kind.__name__}")
        if not 0 <= error["start"] <= error["end"]:
            raise EvalSetError(f"{where}, error {number}: [{error['start']}, {error['end']}) is not a span")
    return value


def _read_ratings(path: str, *, expected: int, systems: set[str]) -> tuple[dict, dict]:
    ratings: dict[str, list[dict | None]] = {}
    raters: dict[str, list[str | None]] = {}
    # a rating line holds a system, its JSON and its rater: its own bound, not a text cell's
    for number, line in enumerate(_read_lines(path, RATING_LINE_LIMITS), 1):
        where = f"{path}, line {number}"
        cols = line.strip().split("\t")
        if len(cols) not in (2, 3):
            raise EvalSetError(f"{where}: expected SYSTEM<TAB>RATING[<TAB>RATER]")
        system = cols[0]
        if system not in systems:
            raise EvalSetError(f"{where}: unknown system {system!r}")
        rating = None if cols[1] == "None" else _rating(cols[1], where)
        ratings.setdefault(system, []).append(rating)
        raters.setdefault(system, []).append(None if rating is None else (cols[2] if len(cols) == 3 else None))
    for system, values in ratings.items():
        if len(values) != expected:
            raise EvalSetError(f"{path}: system {system} has {len(values)} ratings, expected {expected}")
    return ratings, raters


def meta_evaluate(
    evs: EvalSet,
    gold: str,
    level: str,
    statistic: str = "pearson",
    *,
    average_by: str = "none",
    replace_nans_with_zeros: bool = False,
    test: str | None = None,
    resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """Every metric of an EvalSet ranked against the human scores ``gold`` at ``level`` with significance
    clusters (``statistics.permutation_significance``), as mt-metrics-eval's ``GetCorrelations`` +
    ``CompareMetrics`` (``CompareMetricsWithPairwiseConfidenceError`` for ``pce``). At seg level the
    (systems, segments) scores are grouped by ``average_by`` (``statistics.group_scores``: ``none`` flattens
    them, ``item`` averages over segments, ``sys`` over systems), items without a human score dropped; sys level
    takes the systems with a human score (``average_by`` none only). ``pce`` is a system-level statistic computed
    from seg-level scores. Human outputs (systems named after a reference) are left out, as
    ``include_human=False`` does; systems are taken in sorted order."""
    from exports.metaeval import statistics

    level, by_system = _statistic_level(level, statistic, average_by)
    human, metrics = _gold_and_metrics(evs, gold, level)
    systems = _rated_systems(evs, human, metrics)
    flat_gold, vectors, bounds, n = _statistic_items(systems, human, metrics, by_system, average_by)
    if n < 3:
        raise EvalSetError(f"{evs.name}/{evs.lp}: fewer than three {level}-level items with a human score")
    try:
        result = statistics.permutation_significance(
            statistic,
            flat_gold,
            vectors,
            bounds,
            resamples=resamples,
            seed=seed,
            alpha=alpha,
            replace_nans_with_zeros=replace_nans_with_zeros,
            test=test,
            average_by=average_by,
            systems=len(systems) if by_system else None,
        )
    except ValueError as exc:
        raise EvalSetError(f"{evs.name}/{evs.lp}: {exc}") from None
    return {
        "evalset": evs.name,
        "lp": evs.lp,
        "gold": gold,
        "level": level,
        "average_by": average_by,
        "systems": len(systems),
        "n": n,
        "groups": len(bounds) if bounds else 1,
        **result.as_dict(),
    }


def _statistic_level(level: str, statistic: str, average_by: str) -> tuple[str, bool]:
    """The level whose scores ``statistic`` reads, and whether it is a system-level one of seg scores (PCE)."""
    from exports.metaeval import statistics

    if level not in LEVELS:
        raise EvalSetError(f"level {level!r}: choose one of {', '.join(LEVELS)}")
    if average_by not in statistics.AVERAGE_BY:
        raise EvalSetError(f"average_by {average_by!r}: choose one of {', '.join(statistics.AVERAGE_BY)}")
    try:
        by_system = statistics.get_statistic(statistic).by_system
    except ValueError as exc:
        raise EvalSetError(str(exc)) from None
    if by_system:
        level = "seg"  # PCE: system level, from the segment scores
    if level == "sys" and average_by != "none":
        raise EvalSetError("sys-level scores have one item per system: average_by must be none")
    return level, by_system


def _gold_and_metrics(evs: EvalSet, gold: str, level: str) -> tuple[dict, dict]:
    """The human scores ``gold`` at ``level`` and each metric's scores there (system -> its scores)."""
    human = evs.human.get((gold, level))
    if human is None:
        names = sorted({scorer for scorer, lv in evs.human if lv == level})
        raise EvalSetError(
            f"{evs.name}/{evs.lp}: no {gold!r} human scores at {level} level (there are: {', '.join(names) or 'none'})"
        )
    metrics = {metric: scores for (metric, lv), scores in evs.metrics.items() if lv == level}
    if len(metrics) < 2:
        raise EvalSetError(f"{evs.name}/{evs.lp}: fewer than two metrics with {level}-level scores")
    return human, metrics


def _rated_systems(evs: EvalSet, human: dict, metrics: dict) -> list[str]:
    """The systems, sorted, that every metric scored and a person rated somewhere, human outputs left out."""
    return sorted(
        s
        for s in human
        if s not in evs.references and all(s in m for m in metrics.values()) and any(v is not None for v in human[s])
    )


def _statistic_items(systems: list[str], human: dict, metrics: dict, by_system: bool, average_by: str) -> tuple:
    """The items the statistic reads: (gold, each metric's scores, groups' bounds, number with a human score)."""
    from exports.metaeval import statistics

    gold_matrix = [human[s] for s in systems]
    matrices = {m: [scores[s] for s in systems] for m, scores in metrics.items()}
    if by_system:
        flat_gold = [np.nan if v is None else v for row in gold_matrix for v in row]
        vectors = {m: [v for row in rows for v in row] for m, rows in matrices.items()}
        return flat_gold, vectors, None, sum(v is not None for row in gold_matrix for v in row)
    grouped = statistics.group_scores(gold_matrix, matrices, average_by)
    return grouped.gold, grouped.metrics, grouped.bounds, len(grouped.gold)


# ---- stored ratings: character-level error spans (mt-metrics-eval ``ratings.py``) ---------------------------

MAX_ERRORS_PER_RATING = 1_000


@dataclass(frozen=True)
class Ratings:
    """One EvalSet's stored ratings for ``lp``: rating name -> system -> per segment, the target-side error
    spans (None: not rated), and each system's outputs (the spans' character offsets are in them)."""

    name: str
    lp: str
    outputs: dict[str, list[str]]
    ratings: dict[str, dict[str, list[list | None]]]


def _rating_errors(text: str, where: str) -> list:
    """The target-side spans of one rating in ``ratings.Rating``'s JSON (``{"errors": [Error, …]}``; an
    ``Error`` has ``start`` and ``end`` and optionally ``category``, ``severity``, ``score``,
    ``is_source_error``), as ``Rating.FromDict`` reads it. Source-side errors are left out."""
    import json

    from exports.metaeval.span_measures import Span

    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvalSetError(f"{where}: the rating is not JSON ({exc.msg})") from None
    errors = value.get("errors") if isinstance(value, dict) else None
    if not isinstance(errors, list):
        raise EvalSetError(f"{where}: a rating is an object with a list 'errors'")
    if len(errors) > MAX_ERRORS_PER_RATING:
        raise EvalSetError(f"{where}: more than {MAX_ERRORS_PER_RATING} errors in one rating")
    spans = []
    for n, e in enumerate(errors, 1):
        if not isinstance(e, dict):
            raise EvalSetError(f"{where}: error {n} is not an object")
        start, end = e.get("start"), e.get("end")
        if type(start) is not int or type(end) is not int:
            raise EvalSetError(f"{where}: error {n} needs integer 'start' and 'end'")
        severity = e.get("severity")
        if severity is not None and not isinstance(severity, str):
            raise EvalSetError(f"{where}: error {n}: 'severity' is not text")
        if e.get("is_source_error") is True:
            continue
        spans.append(Span(start, end, severity))
    return spans


def read_ratings(root: str, name: str, lp: str) -> Ratings:
    """``ROOT/NAME/human-scores/LP.RATING.seg.rating`` files, read as mt-metrics-eval's ``read_stored_ratings``
    (``ratings.ReadRatingFile``) reads them: ``SYSTEM<TAB>RATING`` or ``SYSTEM<TAB>RATING<TAB>RATER`` per line,
    a system's lines in segment order, ``None`` for an unrated segment. Each system must be one of the
    EvalSet's outputs and rate every segment; an error names the file and line."""
    d = os.path.join(root, name)
    src_path = os.path.join(d, "sources", f"{lp}.txt")
    if not os.path.exists(src_path):
        raise EvalSetError(f"{src_path}: missing")
    n = len(_read_lines(src_path))
    out_dir = os.path.join(d, "system-outputs", lp)
    if not os.path.isdir(out_dir):
        raise EvalSetError(f"{out_dir}: no system outputs")
    outputs = {}
    for f in sorted(os.listdir(out_dir)):
        if f.endswith(".txt") and len(f) > 4:
            outputs[f[:-4]] = _read_lines(os.path.join(out_dir, f))
            if len(outputs[f[:-4]]) != n:
                raise EvalSetError(f"{os.path.join(out_dir, f)}: {len(outputs[f[:-4]])} lines for {n} source segments")
    folder = os.path.join(d, "human-scores")
    prefix, suffix = f"{lp}.", ".seg.rating"
    files = (
        sorted(f for f in os.listdir(folder) if f.startswith(prefix) and f.endswith(suffix))
        if os.path.isdir(folder)
        else []
    )
    if not files:
        raise EvalSetError(f"{folder}: no {lp}.*.seg.rating files")
    ratings = {}
    for f in files:
        path, rating_name = os.path.join(folder, f), f[len(prefix) : -len(suffix)]
        per_system: dict[str, list] = {}
        for number, line in enumerate(_read_lines(path), 1):
            cols = line.strip().split("\t")
            where = f"{path}, line {number}"
            if len(cols) not in (2, 3):
                raise EvalSetError(f"{where}: expected 2 or 3 tab-separated columns, found {len(cols)}")
            if cols[0] not in outputs:
                raise EvalSetError(f"{where}: unknown system {cols[0]!r}")
            per_system.setdefault(cols[0], []).append(None if cols[1] == "None" else _rating_errors(cols[1], where))
        for system, values in per_system.items():
            if len(values) != n:
                raise EvalSetError(f"{path}: system {system} has {len(values)} ratings for {n} segments")
        ratings[rating_name] = per_system
    return Ratings(name, lp, outputs, ratings)


def span_meta_evaluate(ratings: Ratings, gold: str) -> dict:
    """Every other rating's spans against ``gold``'s (``span_measures.variants`` plus the character F1 of
    ``diagnostics.span_counts``), over the (system, segment) pairs both rated."""
    from exports.metaeval.diagnostics import span_counts
    from exports.metaeval.span_measures import Marked, variants

    if gold not in ratings.ratings:
        raise EvalSetError(
            f"{ratings.name}/{ratings.lp}: no {gold!r} ratings (there are: {', '.join(sorted(ratings.ratings))})"
        )
    rows = []
    for rating, per_system in sorted(ratings.ratings.items()):
        if rating == gold:
            continue
        pairs = []
        for system, golds in sorted(ratings.ratings[gold].items()):
            for seg, (g, p) in enumerate(zip(golds, per_system.get(system) or [None] * len(golds))):
                if g is not None and p is not None:
                    pairs.append(Marked(len(ratings.outputs[system][seg]), p, g))
        both, predicted, injected = (
            (sum(c) for c in zip(*(_chars(m, span_counts) for m in pairs))) if pairs else (0, 0, 0)
        )
        rows.append(
            {
                "rating": rating,
                "n": len(pairs),
                "f1": 2 * both / (predicted + injected) if predicted + injected else None,
                "variants": variants(pairs),
            }
        )
    return {"evalset": ratings.name, "lp": ratings.lp, "gold": gold, "ratings": rows}


def _chars(m, span_counts) -> tuple[int, int, int]:
    clip = lambda spans: [(max(0, s.start), min(m.length, s.end)) for s in spans]  # noqa: E731
    return span_counts(clip(m.predicted), clip(m.gold))
