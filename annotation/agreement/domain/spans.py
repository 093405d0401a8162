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


def _check_span(item: Item, span: Span, annotator: Hashable) -> None:
    if span.severity not in SEVERITY:
        raise ValueError(
            f"item {item.id!r}, annotator {annotator!r}: severity {span.severity!r} is not one of {', '.join(SEVERITY)}"
        )
    if span.side not in SIDES:
        raise ValueError(f"item {item.id!r}, annotator {annotator!r}: side {span.side!r} is not target or source")
    size = item.mt_length if span.side == "target" else item.src_length
    if not 0 <= span.start <= span.end <= size:
        raise ValueError(
            f"item {item.id!r}, annotator {annotator!r}: span [{span.start}, {span.end}) lies outside the "
            f"{span.side} text of {size} characters"
        )


def character_labels(item: Item, spans: Sequence[Span], annotator: Hashable = None) -> np.ndarray:
    """The item's characters (translation, then source) labelled with the most severe span over each; linear in
    the characters and spans (a coverage count per severity, by difference arrays)."""
    length = item.mt_length + item.src_length
    cover = np.zeros((len(LABELS), length + 1), dtype=np.int64)
    for span in spans:
        _check_span(item, span, annotator)
        offset = 0 if span.side == "target" else item.mt_length
        cover[SEVERITY[span.severity], offset + span.start] += 1
        cover[SEVERITY[span.severity], offset + span.end] -= 1
    covered = np.cumsum(cover[:, :length], axis=1) > 0
    labels = np.zeros(length, dtype=np.int64)
    for value in range(1, len(LABELS)):
        labels[covered[value]] = value
    return labels


@dataclass
class _Prepared:
    """Every item's per-item sums, from one vectorised pass over all characters of all annotations (linear in
    the characters × annotators and the spans; a loop per item costs minutes at WMT sizes)."""

    groups: list[_Group]
    annotators: np.ndarray  # per item
    f1: np.ndarray  # per item: 2 Σ_pairs |A∩B| (any severity), the same per severity, Σ_pairs |A|+|B|
    coincidence: np.ndarray  # per item: labels × labels, summed over its characters
    injected: np.ndarray  # per item: shared, marked, injected characters, errors found, errors (all annotations)


def _prepare(items: Iterable[Item], annotations: Iterable[Annotation]) -> _Prepared:
    groups = _groups(items, annotations)
    v = len(LABELS)
    n_items = len(groups)
    mt_len = np.array([g.item.mt_length for g in groups], dtype=np.int64)
    item_len = mt_len + np.array([g.item.src_length for g in groups], dtype=np.int64)
    item_off = np.concatenate([[0], np.cumsum(item_len)[:-1]]).astype(np.int64) if n_items else np.zeros(0, np.int64)
    m_item = np.array([len(g.annotations) for g in groups], dtype=np.int64)
    ann_item = np.repeat(np.arange(n_items), m_item)
    ann_len = item_len[ann_item]
    ann_off = np.concatenate([[0], np.cumsum(ann_len)[:-1]]).astype(np.int64) if len(ann_item) else ann_len
    total = int(ann_len.sum())
    # spans as (severity, begin, end) positions in the flat array of every annotation's characters
    sev, begin, finish = [], [], []
    offsets = ann_off.tolist()  # Python ints: indexing a numpy array per span costs more than the span
    j = 0
    for g in groups:
        for a in g.annotations:
            for span in a.spans:
                _check_span(g.item, span, a.annotator)
                if span.start < span.end:
                    shift = offsets[j] + (0 if span.side == "target" else g.item.mt_length)
                    sev.append(SEVERITY[span.severity])
                    begin.append(shift + span.start)
                    finish.append(shift + span.end)
            j += 1
    labels = np.zeros(total, dtype=np.int64)
    sev_a, begin_a, finish_a = np.array(sev, dtype=np.int64), np.array(begin, np.int64), np.array(finish, np.int64)
    for value in range(1, v):  # ascending: the most severe span over a character wins
        pick = sev_a == value
        if pick.any():
            diff = np.bincount(begin_a[pick], minlength=total + 1) - np.bincount(finish_a[pick], minlength=total + 1)
            labels[np.cumsum(diff[:total]) > 0] = value
    # each position's item and its character in the item: counts of each label over the item's annotators
    char = np.repeat(item_off[ann_item] - ann_off, ann_len) + np.arange(total, dtype=np.int64)
    n_chars = int(item_len.sum())
    counts = np.bincount(char * v + labels, minlength=n_chars * v).reshape(n_chars, v).astype(float)
    char_item = np.repeat(np.arange(n_items), item_len)
    m_char = m_item[char_item].astype(float)

    def per_item(weights: np.ndarray, index: np.ndarray = char_item) -> np.ndarray:
        return np.bincount(index, weights=weights, minlength=n_items)

    pairable = m_char >= 2
    marked = m_char - counts[:, 0]
    f1 = np.zeros((n_items, 3))
    f1[:, 0] = 2 * per_item(np.where(pairable, marked * (marked - 1) / 2, 0.0))
    f1[:, 1] = 2 * per_item(np.where(pairable, (counts[:, 1:] * (counts[:, 1:] - 1) / 2).sum(axis=1), 0.0))
    f1[:, 2] = np.where(m_item >= 2, (m_item - 1) * per_item(marked), 0.0)
    coincidence = np.zeros((n_items, v, v))
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(pairable, 1.0 / (m_char - 1.0), 0.0)
    for a in range(v):
        for b in range(a, v):  # symmetric
            weights = counts[:, a] * counts[:, b] - (counts[:, a] if a == b else 0.0)
            coincidence[:, a, b] = coincidence[:, b, a] = per_item(weights * scale)
    injected = _injected_sums(groups, labels, ann_off, ann_item, mt_len)
    return _Prepared(groups, m_item, f1, coincidence, injected)


def _injected_sums(groups, labels, ann_off, ann_item, mt_len) -> np.ndarray:
    """Per item: characters both marked and injected, marked (translation side), injected, errors found, errors;
    summed over its annotations, from prefix sums of each annotation's marked translation characters. Zero for
    items whose injected spans are not known."""
    n_items, total = len(groups), len(labels)
    out = np.zeros((n_items, 5))
    known = np.array([g.item.injected is not None for g in groups], dtype=bool)
    if not known.any():
        return out
    errors, merged = [], []  # (item, start, end): each injected error; their union per item (no double count)
    for index, g in enumerate(groups):
        spans = sorted((a, b) for a, b in g.item.injected or () if a < b)
        for a, b in spans:
            if not 0 <= a < b <= g.item.mt_length:
                raise ValueError(
                    f"item {g.item.id!r}: injected span [{a}, {b}) lies outside its {g.item.mt_length} characters"
                )
            errors.append((index, a, b))
            if merged and merged[-1][0] == index and a <= merged[-1][2]:
                merged[-1] = (index, merged[-1][1], max(b, merged[-1][2]))
            else:
                merged.append((index, a, b))
    target_end = ann_off + mt_len[ann_item]
    inside = np.cumsum(np.bincount(ann_off, minlength=total + 1) - np.bincount(target_end, minlength=total + 1))
    cum = np.concatenate([[0], np.cumsum((labels > 0) & (inside[:total] > 0))])
    m_item = np.bincount(ann_item, minlength=n_items)
    first_ann = np.concatenate([[0], np.cumsum(m_item)[:-1]])
    marked = (cum[target_end] - cum[ann_off]) * known[ann_item]
    out[:, 1] = np.bincount(ann_item, weights=marked, minlength=n_items)

    def per_annotation(spans: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """For each (span, annotation of its item): the span's item and the annotation's marked characters in it."""
        arr = np.array(spans, dtype=np.int64).reshape(-1, 3)
        per = m_item[arr[:, 0]]
        which = np.repeat(np.arange(len(arr)), per)
        starts = np.concatenate([[0], np.cumsum(per)[:-1]]) if len(per) else per
        ann = first_ann[arr[which, 0]] + np.arange(len(which)) - np.repeat(starts, per)
        hits = cum[ann_off[ann] + arr[which, 2]] - cum[ann_off[ann] + arr[which, 1]]
        return arr[which, 0], hits

    if merged:
        item, hits = per_annotation(merged)
        out[:, 0] = np.bincount(item, weights=hits, minlength=n_items)
        lengths = np.array([b - a for _, a, b in merged], dtype=float)
        out[:, 2] = np.bincount([i for i, _, _ in merged], weights=lengths, minlength=n_items) * m_item
        item, hits = per_annotation(errors)
        out[:, 3] = np.bincount(item, weights=hits > 0, minlength=n_items)
        out[:, 4] = np.bincount([i for i, _, _ in errors], minlength=n_items) * m_item
    return out


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
#
# Each takes the items and annotations, or ``prepared``: what ``_prepare`` made of them once (``report`` passes
# it to every statistic).

Prepared = _Prepared


def prepare(items: Iterable[Item], annotations: Iterable[Annotation]) -> Prepared:
    """Checks every span and computes the per-item sums all statistics below are made of."""
    return _prepare(items, annotations)


def _prepared(items, annotations, prepared: Prepared | None) -> Prepared:
    return prepared if prepared is not None else _prepare(items, annotations)


def character_f1_ci(
    items: Iterable[Item] = (),
    annotations: Iterable[Annotation] = (),
    *,
    severity: bool = False,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    prepared: Prepared | None = None,
) -> Interval:
    """Character F1 between annotators (see the module's docstring), resampling the items with two or more
    annotators; ``None`` when none of them marked anything."""
    _check(confidence)
    p = _prepared(items, annotations, prepared)
    pairable = p.annotators >= 2
    num = p.f1[pairable, 1 if severity else 0]
    return _ratio_interval(num, p.f1[pairable, 2], resamples=resamples, confidence=confidence, seed=seed)


def character_f1(items: Iterable[Item], annotations: Iterable[Annotation], *, severity: bool = False) -> float | None:
    return character_f1_ci(items, annotations, severity=severity, resamples=0).estimate


def character_alpha_ci(
    items: Iterable[Item] = (),
    annotations: Iterable[Annotation] = (),
    level: statistics.Level = "nominal",
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    prepared: Prepared | None = None,
) -> Interval:
    """Krippendorff's α on the character labels, from the coincidence matrix summed over the characters of the
    items with two or more annotators (Krippendorff 2011: α depends on the units only through it, so it is the
    ``krippendorff`` package's value on the raters × characters matrix, which the tests check); resampling
    those items. ``None`` when fewer than two labels occur among their characters."""
    _check(confidence)
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"character labels are nominal or ordinal, not {level!r}")
    p = _prepared(items, annotations, prepared)
    per_item = p.coincidence[p.annotators >= 2]
    used = per_item.sum(axis=(0, 2)) > 0
    if len(per_item) == 0 or int(used.sum()) < 2:
        return Interval(None, None, None, confidence, resamples, 0)
    values = np.arange(len(LABELS), dtype=float)[used]
    per_item = per_item[:, used][:, :, used]
    estimate = float(statistics.alpha_from_coincidences(per_item.sum(axis=0)[None], values, level)[0])
    if estimate != estimate:
        return Interval(None, None, None, confidence, resamples, 0)
    if resamples == 0:
        return Interval(estimate, None, None, confidence, resamples, 0)
    k = len(values)
    o = (statistics.resample_counts(len(per_item), resamples, seed) @ per_item.reshape(len(per_item), -1)).reshape(
        resamples, k, k
    )
    return statistics._interval(estimate, statistics.alpha_from_coincidences(o, values, level), confidence, resamples)


def character_alpha(
    items: Iterable[Item], annotations: Iterable[Annotation], level: statistics.Level = "nominal"
) -> float | None:
    return character_alpha_ci(items, annotations, level, resamples=0).estimate


def score_alpha_ci(
    items: Iterable[Item] = (),
    annotations: Iterable[Annotation] = (),
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    prepared: Prepared | None = None,
) -> Interval:
    """Krippendorff's α on the scores (interval level; an item is a unit, unscored annotations left out),
    resampling the items with two or more scores. For the interval metric the coincidence matrix reduces to
    sums of squares: a unit's pairs add ``2(m Σx² − (Σx)²)/(m − 1)`` to n·D_o and the pairable values
    ``2(n Σx² − (Σx)²)/(n − 1)`` to n·D_e, so a 0–100 scale costs no 101 × 101 matrix per unit (the tests
    hold it to the ``krippendorff`` package)."""
    _check(confidence)
    groups = prepared.groups if prepared is not None else _groups(items, annotations)
    rows = []
    for g in groups:
        x = np.array([float(a.score) for a in g.annotations if a.score is not None])
        if len(x) >= 2:
            rows.append((len(x), x.sum(), (x * x).sum()))
    sums = np.array(rows, dtype=float).reshape(-1, 3)

    def alpha(m: np.ndarray, s1: np.ndarray, s2: np.ndarray, weights: np.ndarray) -> np.ndarray:
        # weights: resamples × units (how often each unit is drawn)
        within = 2.0 * (m * s2 - s1 * s1) / (m - 1.0)
        n, total, squares = weights @ m, weights @ s1, weights @ s2
        with np.errstate(invalid="ignore", divide="ignore"):
            d_o = (weights @ within) / n
            d_e = 2.0 * (n * squares - total * total) / (n * (n - 1.0))
            value = 1.0 - d_o / d_e
        return np.where((n > 1) & (d_e > 1e-12 * np.maximum(1.0, squares / np.maximum(n, 1.0))), value, np.nan)

    m, s1, s2 = sums.T
    estimate = float(alpha(m, s1, s2, np.ones((1, len(m))))[0]) if len(m) else float("nan")
    if estimate != estimate:
        return Interval(None, None, None, confidence, resamples, 0)
    if resamples == 0:
        return Interval(estimate, None, None, confidence, resamples, 0)
    values = alpha(m, s1, s2, statistics.resample_counts(len(m), resamples, seed))
    return statistics._interval(estimate, values, confidence, resamples)


def injected_agreement(
    items: Iterable[Item] = (),
    annotations: Iterable[Annotation] = (),
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    prepared: Prepared | None = None,
) -> dict[str, Interval]:
    """Annotators against the injected errors, over the annotated items whose injected spans are known (an item
    with none, a reference, counts its marked characters against precision): character ``precision``,
    ``recall`` and ``f1``, micro-averaged over annotations; ``found``: the share of injected errors an
    annotator marked at least one character of."""
    _check(confidence)
    p = _prepared(items, annotations, prepared)
    keep = np.array([g.item.injected is not None for g in p.groups], dtype=bool) & (p.annotators > 0)
    both, marked, injected, found, errors = p.injected[keep].T
    kw = dict(resamples=resamples, confidence=confidence, seed=seed)
    return {
        "precision": _ratio_interval(both, marked, **kw),
        "recall": _ratio_interval(both, injected, **kw),
        "f1": _ratio_interval(2 * both, marked + injected, **kw),
        "found": _ratio_interval(found, errors, **kw),
    }


def score_by_errors(
    items: Iterable[Item] = (),
    annotations: Iterable[Annotation] = (),
    *,
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    prepared: Prepared | None = None,
) -> list[dict]:
    """Per number of injected errors k: the items, the scores, their mean with a bootstrap interval over items
    (how the scores people give follow the predetermined quality)."""
    _check(confidence)
    by_k: dict[int, list[list[float]]] = defaultdict(list)
    for g in prepared.groups if prepared is not None else _groups(items, annotations):
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
    p = _prepare(items, annotations)
    kw = dict(resamples=resamples, confidence=confidence, seed=seed, prepared=p)
    return {
        "items": len(p.groups),
        "annotations": int(p.annotators.sum()),
        "items_with_two": int((p.annotators >= 2).sum()),
        "character_f1": character_f1_ci(**kw).as_dict(),
        "character_f1_severity": character_f1_ci(severity=True, **kw).as_dict(),
        "character_alpha": character_alpha_ci(**kw).as_dict(),
        "score_alpha": score_alpha_ci(**kw).as_dict(),
        "injected": {name: i.as_dict() for name, i in injected_agreement(**kw).items()},
        "score_by_errors": score_by_errors(**kw),
    }
