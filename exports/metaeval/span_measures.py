"""Span meta-evaluation variants beside the character F1 of ``diagnostics.span_agreement`` (pure Python).

Each measure compares the error spans a metric (or a rater) marks in a translation with the gold ones, over a
group of translations, as its authors' code does (checked against it in
``tests/exports/metaeval/test_span_measures.py``, fixtures from ``exports/metaeval/reference/make_span_fixtures.py``):

- ``exact`` and ``partial``: Perrella et al.'s EM and MP (``sted19/span-mt-metrics-eval``, ``compute`` with
  ``measure="EM"`` / ``"MP"`` and its defaults: one-to-one optimal matching, micro-averaged, no severity
  penalty). A predicted span is matched to at most one gold span and back; EM credits a pair with the same
  offsets, MP a pair that shares a character. TP = the matched pairs, FP = predicted − TP, FN = gold − TP.
  With both credits 0 or 1, the optimum is a maximum bipartite matching (the Hungarian solver there; here
  a count of equal offset pairs for EM and a greedy sweep over the spans' ends for MP: the same size,
  without an assignment solver). Empty spans (an omission) are no span to them and are left out.
  Precision or recall with nothing to divide by is 1.0, as theirs.
- ``wmt23``: the WMT23 QE shared task's character F-score (``WMT-QE-Task/qe-eval-scripts``
  ``wmt23/task2_evaluate.py`` ``score_new``): per character, gold and predicted major and minor marks; a gold
  character is caught (1) by a predicted mark of its severity, or of both severities when the gold has both,
  and half caught (0.5) by the other severity only; precision = caught / characters predicted, recall =
  caught / characters gold. A span with start = end marks the one character at start; an end past the text
  is cut to it. Nothing predicted, nothing gold, or nothing caught: the F-score is undefined (None), where
  their script divides by zero.
- ``wmt25``: the severity-weighted character F1 of the WMT25 error span task (``wmt-conference/wmt25-mteval``
  ``scripts/scoring/task2/scoring_esa.py`` ``get_char_f1``, ``partial_credit`` 0.5): per character, counts
  of major (critical included) and minor marks; TP = the counts matched at the same severity, plus half of
  those left unmatched on both sides; precision = TP / predicted marks, recall = TP / gold marks (1.0 when
  nothing to divide by), overlapping spans counting each time.

Severity: "critical" counts as major for ``wmt23`` (their script knows only major and minor) as for
``wmt25``; a span without a severity (the release's injected spans and the spans stored with a metric's
scores carry none) counts as major, so on a release the severity-weighted measures weigh every character
alike.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

MAJOR, MINOR = "major", "minor"
_SEVERITY = {"major": MAJOR, "critical": MAJOR, "minor": MINOR, None: MAJOR, "": MAJOR}


@dataclass(frozen=True)
class Span:
    """``[start, end)`` character offsets in the translation, with the severity its annotator gave."""

    start: int
    end: int
    severity: str | None = None


@dataclass(frozen=True)
class Marked:
    """One translation: its length in characters, the predicted spans and the gold ones."""

    length: int
    predicted: Sequence[Span]
    gold: Sequence[Span]


def severity_of(span: Span) -> str:
    key = span.severity.strip().lower() if isinstance(span.severity, str) else None
    if key not in _SEVERITY:
        raise ValueError(f"unknown severity {span.severity!r} (major, minor or critical)")
    return _SEVERITY[key]


# ---- EM / MP: one-to-one matching ---------------------------------------------------------------------------


def _exact_pairs(predicted: Sequence[Span], gold: Sequence[Span]) -> int:
    """Size of a maximum one-to-one matching of equal spans: per offset pair, the fewer of its two counts."""
    gold_counts = Counter((g.start, g.end) for g in gold)
    return sum(min(n, gold_counts[key]) for key, n in Counter((p.start, p.end) for p in predicted).items())


def _overlap_pairs(predicted: Sequence[Span], gold: Sequence[Span]) -> int:
    """Size of a maximum one-to-one matching of spans that share a character. Greedy, in the order of the
    predicted spans' ends: each takes, of the gold spans that start before it ends, the unused one that ends
    first after it starts (an exchange argument: a later predicted span ends no earlier, so every gold span
    this one could take starts early enough for it too, and the one ending first is the least useful to it)."""
    by_start = sorted((g.start, g.end) for g in gold)
    open_ends: list[int] = []  # ends of the unused gold spans that start before the current span ends, sorted
    added = matched = 0
    for p in sorted(predicted, key=lambda s: s.end):
        while added < len(by_start) and by_start[added][0] < p.end:
            insort(open_ends, by_start[added][1])
            added += 1
        i = bisect_right(open_ends, p.start)
        if i < len(open_ends):
            del open_ends[i]
            matched += 1
    return matched


def _one_to_one(pairs: Iterable[Marked], matching: Callable[[Sequence[Span], Sequence[Span]], int]) -> dict:
    tp = fp = fn = 0
    for m in pairs:
        predicted = [s for s in m.predicted if s.start < s.end]
        gold = [s for s in m.gold if s.start < s.end]
        matched = matching(predicted, gold)
        tp, fp, fn = tp + matched, fp + len(predicted) - matched, fn + len(gold) - matched
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn}


def exact_match(pairs: Iterable[Marked]) -> dict:
    return _one_to_one(pairs, _exact_pairs)


def partial_match(pairs: Iterable[Marked]) -> dict:
    return _one_to_one(pairs, _overlap_pairs)


# ---- character measures ---------------------------------------------------------------------------------------


def _marks(spans: Sequence[Span], size: int, wmt23: bool) -> dict[str, list[int]]:
    counts = {MAJOR: [0] * size, MINOR: [0] * size}
    for s in spans:
        row = counts[severity_of(s)]
        if wmt23:  # task2_evaluate.py: arrays of len(mt) + 1; an end past the text cut to it; s == e: one char
            end = min(s.end, size - 1)
            if s.start < 0 or end < 0:
                continue
            for i in [s.start] if s.start == end else range(s.start, end):
                if 0 <= i < size:
                    row[i] += 1
        else:
            for i in range(max(0, s.start), min(s.end, size)):
                row[i] += 1
    return counts


def wmt23_char_f(pairs: Iterable[Marked]) -> dict:
    caught, n_gold, n_predicted = 0.0, 0, 0
    for m in pairs:
        gold, pred = _marks(m.gold, m.length + 1, True), _marks(m.predicted, m.length + 1, True)
        for g_maj, p_maj, g_min, p_min in zip(gold[MAJOR], pred[MAJOR], gold[MINOR], pred[MINOR]):
            n_gold += bool(g_maj or g_min)
            n_predicted += bool(p_maj or p_min)
            if g_maj and g_min:
                caught += 1.0 if p_maj or p_min else 0.0
            elif g_maj:
                caught += 1.0 if p_maj else 0.5 if p_min else 0.0
            elif g_min:
                caught += 1.0 if p_min else 0.5 if p_maj else 0.0
    precision = caught / n_predicted if n_predicted else None
    recall = caught / n_gold if n_gold else None
    f1 = (
        None
        if precision is None or recall is None or not precision + recall
        else 2 * precision * recall / (precision + recall)
    )
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "caught": caught,
        "gold": n_gold,
        "predicted": n_predicted,
    }


def wmt25_char_f(pairs: Iterable[Marked], partial_credit: float = 0.5) -> dict:
    tp, n_gold, n_predicted = 0.0, 0, 0
    for m in pairs:
        gold, pred = _marks(m.gold, m.length, False), _marks(m.predicted, m.length, False)
        n_gold += sum(gold[MAJOR]) + sum(gold[MINOR])
        n_predicted += sum(pred[MAJOR]) + sum(pred[MINOR])
        for g_maj, p_maj, g_min, p_min in zip(gold[MAJOR], pred[MAJOR], gold[MINOR], pred[MINOR]):
            tp += min(g_maj, p_maj) + min(g_min, p_min)
            left_gold = max(0, g_maj - p_maj) + max(0, g_min - p_min)
            left_pred = max(0, p_maj - g_maj) + max(0, p_min - g_min)
            tp += min(left_gold, left_pred) * partial_credit
    precision = tp / n_predicted if n_predicted else 1.0
    recall = tp / n_gold if n_gold else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "gold": n_gold, "predicted": n_predicted}


MEASURES: dict[str, Callable[[Iterable[Marked]], dict]] = {
    "exact": exact_match,
    "partial": partial_match,
    "wmt23": wmt23_char_f,
    "wmt25": wmt25_char_f,
}


def variants(pairs: Iterable[Marked]) -> dict[str, dict]:
    """Every measure of ``MEASURES`` over one group of translations."""
    group = list(pairs)
    return {name: measure(group) for name, measure in MEASURES.items()}
