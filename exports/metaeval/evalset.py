"""mt-metrics-eval's ``EvalSet`` directory layout, written and read (pure Python, no Django).

Layout under ``ROOT/NAME`` for one language pair ``LP`` (mt-metrics-eval README, "File organization"):

- ``documents/LP.docs``: ``domain doc`` per segment;
- ``sources/LP.txt``, ``references/LP.REF.txt``: one segment per line;
- ``system-outputs/LP/SYSTEM.txt``: one line per segment;
- ``human-scores/LP.SCORER.LEVEL.score`` and ``metric-scores/LP/METRIC-REF.LEVEL.score``: ``system score`` per
  line, one line per segment (``seg``) or one per system (``sys``); a human score may be ``None``.

How a release maps onto it (``from_triplets``): a segment is a triplet (its source, its reference, its pseudo
translation); the system ``triplets`` translates every segment and its human segment score is the predetermined
quality −5·k, so its segment-level correlation is the triplet-level statistic. Each pseudo system translates its
own triplets; elsewhere its output is empty and its human score ``None`` (mt-metrics-eval drops those items),
and its metric score 0 there, since metric files may not hold ``None`` (the items are dropped all the same). Its
system-level scores are the predetermined quality and the metric's mean over its triplets.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from core.corpus.domain import DEFAULT_LIMITS, Limits, text_length_problem
from core.domain.errors import Invalid

HUMAN_SCORER = "xqm"  # the predetermined quality; mt-metrics-eval's std_gold at seg and sys level
REFERENCE = "refA"
ALL_TRIPLETS = "triplets"
LEVELS = ("seg", "sys")
MAX_LINES = 5_000_000  # any one file: bounds what an import reads


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
) -> EvalSet:
    """An EvalSet of one direction: a segment per triplet, the ``triplets`` system and each pseudo system, the
    metrics' seg and sys scores (metric names without a reference suffix get ``-refA``)."""
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
    return EvalSet(
        name,
        lp,
        [_line(t.source, f"triplet {t.id}") for t in triplets],
        {REFERENCE: [_line(t.reference, f"triplet {t.id}") for t in triplets]},
        outputs,
        [("xqmeval", t.id.replace(" ", "_")) for t in triplets],
        {(HUMAN_SCORER, "seg"): human_seg, (HUMAN_SCORER, "sys"): human_sys},
        metrics,
    )


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
    return d


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
    return EvalSet(name, lp, sources, references, outputs, documents, human, metrics)


def meta_evaluate(
    evs: EvalSet,
    gold: str,
    level: str,
    statistic: str = "pearson",
    *,
    resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict:
    """Every metric of an EvalSet ranked against the human scores ``gold`` at ``level`` with significance
    clusters (``statistics.permutation_significance``), as mt-metrics-eval's ``GetCorrelations`` +
    ``CompareMetrics`` with ``average_by='none'``: seg level flattens systems x segments, items without a human
    score dropped; sys level takes the systems with a human score. Human outputs (systems named after a
    reference) are left out, as ``include_human=False`` does."""
    from exports.metaeval import statistics

    if level not in LEVELS:
        raise EvalSetError(f"level {level!r}: choose one of {', '.join(LEVELS)}")
    human = evs.human.get((gold, level))
    if human is None:
        names = sorted({scorer for scorer, lv in evs.human if lv == level})
        raise EvalSetError(
            f"{evs.name}/{evs.lp}: no {gold!r} human scores at {level} level (there are: {', '.join(names) or 'none'})"
        )
    metrics = {metric: scores for (metric, lv), scores in evs.metrics.items() if lv == level}
    if len(metrics) < 2:
        raise EvalSetError(f"{evs.name}/{evs.lp}: fewer than two metrics with {level}-level scores")
    systems = sorted(s for s in human if s not in evs.references and all(s in m for m in metrics.values()))
    keep = [(s, i) for s in systems for i, v in enumerate(human[s]) if v is not None]
    if len(keep) < 3:
        raise EvalSetError(f"{evs.name}/{evs.lp}: fewer than three {level}-level items with a human score")
    gold_vector = [human[s][i] for s, i in keep]
    vectors = {m: [scores[s][i] for s, i in keep] for m, scores in metrics.items()}
    result = statistics.permutation_significance(
        statistic, gold_vector, vectors, resamples=resamples, seed=seed, alpha=alpha
    )
    return {
        "evalset": evs.name,
        "lp": evs.lp,
        "gold": gold,
        "level": level,
        "systems": len(systems),
        "n": len(keep),
        **result.as_dict(),
    }
