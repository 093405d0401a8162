"""Agreement on error spans (ESA and MQM, SPEC §10), per direction. Pure Python + numpy; imports no Django.

An item is one text annotated (a translation with its source); each annotator's annotation of it is a list of
spans ``[start, end)`` in characters, each with a severity, on the translation (``side="target"``) or on the
source (``side="source"``: an omission), and for ESA a 0–100 score. From these:

- **character labels** (``character_labels``): per character of the item, the most severe span covering it
  (0 none, 1 minor, 2 major, 3 critical), the source's characters after the translation's; an empty span (an
  insertion point) has no characters;
- **character F1 between annotators** (``character_f1``): over every pair of annotators of an item,
  ``2·|A∩B| / (|A|+|B|)`` of the characters each marked, summed over pairs and items before dividing (micro);
  ``severity=True`` counts a shared character only when both gave it the same severity;
- **Krippendorff's α on character labels** (``character_alpha``): each character of each item is a unit rated by
  the item's annotators (nominal by default; ``ordinal`` takes none < minor < major < critical);
- **Krippendorff's α on the scores** (``score_alpha``): interval level, an item is a unit;
- **human against injected spans** (``injected_agreement``): for items whose errors are known (the injected
  spans of a pseudo translation, in its characters), character precision, recall and F1 of each annotation's
  translation spans against them, and the share of injected errors found (any character overlap, the attention
  check's rule);
- **score per number of injected errors** (``score_by_errors``): the mean score of the items with k errors.

Every statistic comes with a percentile bootstrap interval over *items* (the characters of one text are not
independent draws), on the seeded resamples of ``statistics.resample_counts``, like the other agreement
statistics; ``None`` marks an undefined value, never 0 or 1.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from annotation.agreement.domain import statistics
from annotation.agreement.domain.statistics import Interval

LABELS: tuple[str, ...] = ("none", "minor", "major", "critical")
SEVERITY = {name: value for value, name in enumerate(LABELS) if value}
SIDES = ("target", "source")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    severity: str
    side: str = "target"


@dataclass(frozen=True)
class Item:
    """A text as annotated: its lengths in characters (Python ``str`` indices), the injected errors where known."""

    id: Hashable
    mt_length: int
    src_length: int = 0
    injected: Sequence[tuple[int, int]] | None = None  # character spans in the translation; None: not known
    errors: int | None = None  # k, the number of injected errors; None: not a pseudo translation


@dataclass(frozen=True)
class Annotation:
    item: Hashable
    annotator: Hashable
    spans: Sequence[Span] = ()
    score: float | None = None


@dataclass
class _Group:
    item: Item
    annotations: list[Annotation] = field(default_factory=list)


def _groups(items: Iterable[Item], annotations: Iterable[Annotation]) -> list[_Group]:
    by_id: dict[Hashable, _Group] = {}
    for item in items:
        if item.id in by_id:
            raise ValueError(f"item {item.id!r} is listed twice")
        by_id[item.id] = _Group(item)
    for a in annotations:
        group = by_id.get(a.item)
        if group is None:
            raise ValueError(f"annotation by {a.annotator!r}: item {a.item!r} is not among the items")
        if any(b.annotator == a.annotator for b in group.annotations):
            raise ValueError(f"item {a.item!r}: annotator {a.annotator!r} annotated it twice")
        group.annotations.append(a)
    return list(by_id.values())


def character_labels(item: Item, spans: Sequence[Span], annotator: Hashable = None) -> np.ndarray:
    """The item's characters (translation, then source) labelled with the most severe span over each; linear in
    the characters and spans (a coverage count per severity, by difference arrays)."""
    length = item.mt_length + item.src_length
    cover = np.zeros((len(LABELS), length + 1), dtype=np.int64)
    for span in spans:
        if span.severity not in SEVERITY:
            raise ValueError(
                f"item {item.id!r}, annotator {annotator!r}: severity {span.severity!r} is not one of "
                f"{', '.join(SEVERITY)}"
            )
        if span.side not in SIDES:
            raise ValueError(f"item {item.id!r}, annotator {annotator!r}: side {span.side!r} is not target or source")
        size, offset = (item.mt_length, 0) if span.side == "target" else (item.src_length, item.mt_length)
        if not 0 <= span.start <= span.end <= size:
            raise ValueError(
                f"item {item.id!r}, annotator {annotator!r}: span [{span.start}, {span.end}) lies outside the "
                f"{span.side} text of {size} characters"
            )
        cover[SEVERITY[span.severity], offset + span.start] += 1
        cover[SEVERITY[span.severity], offset + span.end] -= 1
    covered = np.cumsum(cover[:, :length], axis=1) > 0
    labels = np.zeros(length, dtype=np.int64)
    for value in range(1, len(LABELS)):
        labels[covered[value]] = value
    return labels


def _label_matrix(group: _Group) -> np.ndarray:
    """Annotators × characters of one item."""
    length = group.item.mt_length + group.item.src_length
    if not group.annotations:
        return np.zeros((0, length), dtype=np.int64)
    return np.stack([character_labels(group.item, a.spans, a.annotator) for a in group.annotations])


def label_counts(matrix: np.ndarray) -> np.ndarray:
    """Characters × labels: how many annotators gave each character each label."""
    counts = np.zeros((matrix.shape[1], len(LABELS)))
    for row in matrix:
        counts[np.arange(matrix.shape[1]), row] += 1
    return counts


# ---- per-item sufficient statistics: every statistic below is a ratio of sums over items ------------------


def _f1_parts(matrix: np.ndarray, severity: bool) -> tuple[float, float]:
    """(2 Σ_pairs |A∩B|, Σ_pairs |A|+|B|) of one item's annotators."""
    m = matrix.shape[0]
    if m < 2:
        return 0.0, 0.0
    marked = matrix > 0
    if severity:
        per_label = label_counts(matrix)[:, 1:]
        shared = float((per_label * (per_label - 1) / 2).sum())
    else:
        c = marked.sum(axis=0)
        shared = float((c * (c - 1) / 2).sum())
    return 2.0 * shared, float((m - 1) * marked.sum())


def _coincidence(matrix: np.ndarray) -> np.ndarray:
    """The item's labels × labels coincidence matrix, summed over its characters (each a unit of m raters)."""
    m = matrix.shape[0]
    if m < 2:
        return np.zeros((len(LABELS), len(LABELS)))
    n = label_counts(matrix)
    return (n.T @ n - np.diag(n.sum(axis=0))) / (m - 1.0)


def _ratio_interval(
    numerators: np.ndarray, denominators: np.ndarray, *, resamples: int, confidence: float, seed: int
) -> Interval:
    """Σ num / Σ den over items, its bootstrap over items."""
    total = float(denominators.sum())
    estimate = float(numerators.sum()) / total if total > 0 else None
    if estimate is None or len(numerators) == 0:
        return Interval(estimate, None, None, confidence, resamples, 0)
    counts = statistics.resample_counts(len(numerators), resamples, seed)
    den = counts @ denominators
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(den > 0, (counts @ numerators) / den, np.nan)
    return statistics._interval(estimate, values, confidence, resamples)


def _check(confidence: float) -> None:
    statistics._check_confidence(confidence)


# ---- the statistics ------------------------------------------------------------------------------------


def character_f1_ci(
    items: Iterable[Item],
    annotations: Iterable[Annotation],
    *,
    severity: bool = False,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Character F1 between annotators (see the module's docstring); ``None`` when no item has two annotators
    who marked anything."""
    _check(confidence)
    parts = [_f1_parts(_label_matrix(g), severity) for g in _groups(items, annotations) if len(g.annotations) >= 2]
    num = np.array([p[0] for p in parts], dtype=float)
    den = np.array([p[1] for p in parts], dtype=float)
    return _ratio_interval(num, den, resamples=resamples, confidence=confidence, seed=seed)


def character_f1(items: Iterable[Item], annotations: Iterable[Annotation], *, severity: bool = False) -> float | None:
    return character_f1_ci(items, annotations, severity=severity, resamples=0).estimate


def character_alpha_ci(
    items: Iterable[Item],
    annotations: Iterable[Annotation],
    level: statistics.Level = "nominal",
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Krippendorff's α on the character labels; the estimate through the ``krippendorff`` package (from each
    character's label counts), the resamples from each item's coincidence matrix. ``None`` when fewer than two
    labels occur among the characters of items with two annotators."""
    _check(confidence)
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"character labels are nominal or ordinal, not {level!r}")
    matrices = [_label_matrix(g) for g in _groups(items, annotations) if len(g.annotations) >= 2]
    if not matrices:
        return Interval(None, None, None, confidence, resamples, 0)
    counts = np.concatenate([label_counts(m) for m in matrices])
    used = counts.sum(axis=0) > 0
    if int(used.sum()) < 2:
        return Interval(None, None, None, confidence, resamples, 0)
    import krippendorff

    values = np.arange(len(LABELS), dtype=float)[used]
    estimate = float(krippendorff.alpha(value_counts=counts[:, used], value_domain=values, level_of_measurement=level))
    if resamples == 0:
        return Interval(estimate, None, None, confidence, resamples, 0)
    per_item = np.stack([_coincidence(m)[np.ix_(used, used)].ravel() for m in matrices])
    k = int(used.sum())
    o = (statistics.resample_counts(len(matrices), resamples, seed) @ per_item).reshape(resamples, k, k)
    return statistics._interval(estimate, statistics.alpha_from_coincidences(o, values, level), confidence, resamples)


def character_alpha(
    items: Iterable[Item], annotations: Iterable[Annotation], level: statistics.Level = "nominal"
) -> float | None:
    return character_alpha_ci(items, annotations, level, resamples=0).estimate


def score_alpha_ci(
    items: Iterable[Item],
    annotations: Iterable[Annotation],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Krippendorff's α on the scores (interval level; an item is a unit, unscored annotations left out)."""
    units = [[a.score for a in g.annotations if a.score is not None] for g in _groups(items, annotations)]
    return statistics.krippendorff_alpha_units_ci(
        units, "interval", resamples=resamples, confidence=confidence, seed=seed
    )


def _injected_parts(group: _Group) -> tuple[float, float, float, float, float]:
    """(shared characters, marked, injected, injected errors found, injected errors) over the item's annotations."""
    item = group.item
    injected = np.zeros(item.mt_length, dtype=bool)
    spans = [(a, b) for a, b in item.injected or () if a < b]
    for a, b in spans:
        if not 0 <= a < b <= item.mt_length:
            raise ValueError(f"item {item.id!r}: injected span [{a}, {b}) lies outside its {item.mt_length} characters")
        injected[a:b] = True
    out = np.zeros(5)
    for annotation in group.annotations:
        marked = character_labels(item, annotation.spans, annotation.annotator)[: item.mt_length] > 0
        found = sum(1 for a, b in spans if marked[a:b].any())
        out += (float((marked & injected).sum()), float(marked.sum()), float(injected.sum()), found, len(spans))
    return tuple(out)


def injected_agreement(
    items: Iterable[Item],
    annotations: Iterable[Annotation],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Interval]:
    """Annotators against the injected errors, over the items whose injected spans are known (an item with none,
    a reference, counts its marked characters against precision): character ``precision``, ``recall`` and
    ``f1``, micro-averaged over annotations; ``found``: the share of injected errors an annotator marked at
    least one character of."""
    _check(confidence)
    parts = np.array(
        [_injected_parts(g) for g in _groups(items, annotations) if g.item.injected is not None and g.annotations],
        dtype=float,
    ).reshape(-1, 5)
    both, marked, injected, found, errors = parts.T
    kw = dict(resamples=resamples, confidence=confidence, seed=seed)
    return {
        "precision": _ratio_interval(both, marked, **kw),
        "recall": _ratio_interval(both, injected, **kw),
        "f1": _ratio_interval(2 * both, marked + injected, **kw),
        "found": _ratio_interval(found, errors, **kw),
    }


def score_by_errors(
    items: Iterable[Item],
    annotations: Iterable[Annotation],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[dict]:
    """Per number of injected errors k: the items, the scores, their mean with a bootstrap interval over items
    (how the scores people give follow the predetermined quality)."""
    _check(confidence)
    by_k: dict[int, list[list[float]]] = defaultdict(list)
    for g in _groups(items, annotations):
        scores = [float(a.score) for a in g.annotations if a.score is not None]
        if g.item.errors is not None and scores:
            by_k[g.item.errors].append(scores)
    rows = []
    for k in sorted(by_k):
        sums = np.array([sum(s) for s in by_k[k]])
        sizes = np.array([len(s) for s in by_k[k]], dtype=float)
        interval = _ratio_interval(sums, sizes, resamples=resamples, confidence=confidence, seed=seed)
        rows.append({"errors": k, "items": len(sums), "scores": int(sizes.sum()), **interval.as_dict()})
    return rows


def report(
    items: Sequence[Item],
    annotations: Sequence[Annotation],
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict:
    """Every span statistic of one direction, each ``Interval.as_dict()``, with the counts behind them."""
    kw = dict(resamples=resamples, confidence=confidence, seed=seed)
    groups = _groups(items, annotations)
    return {
        "items": len(groups),
        "annotations": sum(len(g.annotations) for g in groups),
        "items_with_two": sum(1 for g in groups if len(g.annotations) >= 2),
        "character_f1": character_f1_ci(items, annotations, **kw).as_dict(),
        "character_f1_severity": character_f1_ci(items, annotations, severity=True, **kw).as_dict(),
        "character_alpha": character_alpha_ci(items, annotations, **kw).as_dict(),
        "score_alpha": score_alpha_ci(items, annotations, **kw).as_dict(),
        "injected": {name: i.as_dict() for name, i in injected_agreement(items, annotations, **kw).items()},
        "score_by_errors": score_by_errors(items, annotations, **kw),
    }
