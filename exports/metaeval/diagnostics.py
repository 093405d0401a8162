"""Known-answer diagnostics: what a metric does to each injected error, from the release's own records (pure
Python and numpy, no Django).

Every pseudo translation is the reference (k = 0) of its segment with k accepted single errors spliced in, each
of a known type and from a known candidate. So, per metric (scores oriented so that higher is better):

- **sensitivity**: the drop ``score(reference) − score(pseudo translation)`` of each single-error pseudo
  translation (k = 1) of a segment, per error type: its mean with a percentile bootstrap interval, and the
  detection rate, the share of drops above the metric's tie threshold (a drop at or under it is a tie: the
  error went unpunished);
- **additivity**: for each pseudo translation with k ≥ 2 errors whose every error also appears alone (k = 1)
  in the same segment, its drop against the sum of those single-error drops; per error type (translations
  whose errors are all of one type) and k, the mean of each and their ratio (1: errors cost what they cost
  alone; below 1: later errors cost less);
- **heatmap**: detection rate per error type and direction, one grid per metric;
- **span agreement**: for a metric that marks error spans (GEMBA-MQM, xCOMET), character-level precision,
  recall and F1 of its predicted spans against the injected ones, both in the pseudo translation's own
  character offsets (``span_agreement``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from core.domain.edit_types import EDIT_TYPES, END, HEAD, MQM, NONE, PERTURBATION

MIXED = "(mixed types)"
_TOKEN = re.compile(r"\S+")  # the build's token unit: str.split()'s whitespace-separated tokens


@dataclass(frozen=True)
class Translation:
    """One triplet as the diagnostics see it."""

    triplet_id: str
    segment_id: str
    level: int
    error_types: Sequence[str]
    candidates: Sequence[str]  # the accepted single errors spliced in, in the release's span order
    score: float  # oriented: higher is better


def _mean_interval(values: np.ndarray, resamples: int, seed: int, alpha: float) -> tuple[float, float]:
    if len(values) < 2:
        return float("nan"), float("nan")
    idx = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    means = values[idx].mean(axis=1)
    low, high = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def _by_segment(translations: Iterable[Translation]) -> dict[str, list[Translation]]:
    segments: dict[str, list[Translation]] = defaultdict(list)
    for t in translations:
        segments[t.segment_id].append(t)
    return segments


# A candidate's label in the release's spans is "<error type>.<position>" (a "#<id>" suffix when two runs made the
# same pair): MQM errors sit at the head or the end, perturbations at no position. So the label tells an MQM
# omission from a perturbation omission, which share their error type's name.
_CATEGORY_OF_POSITION = {HEAD: MQM, END: MQM, NONE: PERTURBATION}


def edit_class(error_type: str, candidate: str) -> tuple[str, str]:
    """(category, severity) of a single error: its kind (``mqm`` or ``perturbation``) read from its candidate's
    label, and the severity the edit-type registry gives that kind and type (the severity injection stored).
    ``("", "")`` when the label names no known position or the pair is not a registered edit type."""
    position = candidate.partition("#")[0].rpartition(".")[2]
    category = _CATEGORY_OF_POSITION.get(position)
    kind = EDIT_TYPES.get((category, error_type)) if category else None
    return (category, kind.severity) if kind else ("", "")


def single_error_drops(translations: Iterable[Translation]) -> list[tuple[Translation, float]]:
    """Each k = 1 translation with the drop from its segment's reference (segments without a k = 0 score are
    skipped: no known answer to measure against)."""
    out = []
    for members in _by_segment(translations).values():
        reference = [t for t in members if t.level == 0]
        if len(reference) != 1:
            continue
        out.extend((t, reference[0].score - t.score) for t in members if t.level == 1 and t.error_types)
    return out


def sensitivity(
    translations: Iterable[Translation],
    *,
    tie_threshold: float = 0.0,
    resamples: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
) -> list[dict]:
    """Per error type, category and severity (``edit_class``): single-error pseudo translations, mean drop with
    interval, detection rate."""
    drops: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for t, drop in single_error_drops(translations):
        error_type = t.error_types[0]
        drops[(error_type, *edit_class(error_type, t.candidates[0] if t.candidates else ""))].append(drop)
    rows = []
    for key in sorted(drops):
        values = np.asarray(drops[key])
        low, high = _mean_interval(values, resamples, seed, alpha)
        rows.append(
            {
                "error_type": key[0],
                "category": key[1],
                "severity": key[2],
                "n": len(values),
                "mean_drop": float(values.mean()),
                "low": low,
                "high": high,
                "detection_rate": float(np.mean(values > tie_threshold)),
            }
        )
    return rows


def additivity(translations: Iterable[Translation]) -> list[dict]:
    """Per error type (or MIXED) and k ≥ 2: the mean drop of the pseudo translations against the mean of the
    sums of their errors' single-error drops in the same segment."""
    pairs: dict[tuple[str, int], list[tuple[float, float]]] = defaultdict(list)
    for members in _by_segment(translations).values():
        reference = [t for t in members if t.level == 0]
        if len(reference) != 1:
            continue
        ref = reference[0].score
        alone = {t.candidates[0]: ref - t.score for t in members if t.level == 1 and len(t.candidates) == 1}
        for t in members:
            if t.level < 2 or len(t.candidates) != t.level or any(c not in alone for c in t.candidates):
                continue
            kind = t.error_types[0] if len(set(t.error_types)) == 1 else MIXED
            pairs[(kind, t.level)].append((ref - t.score, sum(alone[c] for c in t.candidates)))
    rows = []
    for (kind, level), values in sorted(pairs.items()):
        actual, predicted = (float(np.mean(v)) for v in zip(*values))
        rows.append(
            {
                "error_type": kind,
                "k": level,
                "n": len(values),
                "mean_drop": actual,
                "mean_sum_of_single_drops": predicted,
                "ratio": actual / predicted if predicted else float("nan"),
            }
        )
    return rows


def heatmap_row(row: dict) -> str:
    """A sensitivity row's name in the heatmap: its error type, with category and severity for a perturbation
    (a perturbation omission is not the MQM omission of the same name)."""
    if row.get("category") == PERTURBATION:
        return f"{row['error_type']} ({PERTURBATION}, {row['severity']})"
    return row["error_type"]


def heatmap(sensitivities: dict[str, dict[str, list[dict]]]) -> dict:
    """``{metric: {direction: sensitivity rows}}`` → per metric a grid of detection rates, rows the error types
    and columns the directions (None where a type has no single-error translation in a direction)."""
    grids = {}
    for metric, per_direction in sensitivities.items():
        directions = sorted(per_direction)
        types = sorted({heatmap_row(row) for rows in per_direction.values() for row in rows})
        cells = {(d, heatmap_row(row)): row["detection_rate"] for d, rows in per_direction.items() for row in rows}
        grids[metric] = {
            "directions": directions,
            "error_types": types,
            "rows": [[cells.get((d, t)) for d in directions] for t in types],
        }
    return grids


ALL_TRANSLATIONS = "(all translations)"


@dataclass(frozen=True)
class SpanTranslation:
    """One triplet's predicted and injected spans: ``[start, end)`` character offsets in its pseudo translation."""

    level: int
    error_types: Sequence[str]
    predicted: Sequence[tuple[int, int]]
    injected: Sequence[tuple[int, int]]
    length: int | None = None  # the pseudo translation's characters (None: up to the last span's end)


def _characters(spans: Iterable[tuple[int, int]]) -> set[int]:
    # a set: overlapping predicted spans (an LLM may mark a word twice) count each character once
    return {i for start, end in spans for i in range(start, end)}


def character_spans(mt: str, unit: str, spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The build's ``[start, end)`` spans in the pseudo translation's units (``unit``: "char" or "token",
    whitespace-separated tokens) as character offsets in ``mt``. A token span runs from its first token's first
    character to its last token's last one; an empty span (an omission: nothing of it is left in the
    translation) has no characters."""
    if unit == "char":
        return [(max(0, a), min(len(mt), b)) for a, b in spans if a < b]
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(mt)]
    out = []
    for a, b in spans:
        a, b = max(0, a), min(len(tokens), b)
        if a < b:
            out.append((tokens[a][0], tokens[b - 1][1]))
    return out


def span_counts(predicted: Iterable[tuple[int, int]], injected: Iterable[tuple[int, int]]) -> tuple[int, int, int]:
    """(characters in both, predicted characters, injected characters) of one translation."""
    p, g = _characters(predicted), _characters(injected)
    return len(p & g), len(p), len(g)


def _prf(both: int, predicted: int, injected: int) -> dict:
    # micro-averaged over the characters of every translation in the group; a ratio with nothing to divide
    # by is None (no predicted characters: precision undefined; no injected characters: recall undefined)
    return {
        "precision": both / predicted if predicted else None,
        "recall": both / injected if injected else None,
        "f1": 2 * both / (predicted + injected) if predicted + injected else None,
        "overlap_chars": both,
        "predicted_chars": predicted,
        "injected_chars": injected,
    }


def _marked(t: SpanTranslation):
    from exports.metaeval.span_measures import Marked, Span

    length = t.length if t.length is not None else max((b for _, b in (*t.predicted, *t.injected)), default=0)
    # the release's spans carry no severity: every one counts as major (span_measures' docstring)
    return Marked(length, [Span(a, b) for a, b in t.predicted], [Span(a, b) for a, b in t.injected])


def span_agreement(translations: Iterable[SpanTranslation]) -> list[dict]:
    """Character-level precision, recall and F1 per error type over the single-error translations (k = 1),
    then one row over every translation (references and k ≥ 2 too: a span marked on a reference is all false
    positive). Each row also holds ``variants``: ``span_measures.variants`` over the same translations (exact
    and partial match, the WMT23 and WMT25 character F-scores)."""
    from exports.metaeval.span_measures import variants

    per_type: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    total = [0, 0, 0, 0]
    marked: dict[str | None, list] = defaultdict(list)
    for t in translations:
        counts = span_counts(t.predicted, t.injected)
        kinds = [None] + ([t.error_types[0]] if t.level == 1 and len(t.error_types) == 1 else [])
        m = _marked(t)
        for kind in kinds:
            group = total if kind is None else per_type[kind]
            for i, c in enumerate((*counts, 1)):
                group[i] += c
            marked[kind].append(m)
    rows = [
        {"error_type": kind, "n": c[3], **_prf(*c[:3]), "variants": variants(marked[kind])}
        for kind, c in sorted(per_type.items())
    ]
    if total[3]:
        rows.append(
            {"error_type": ALL_TRANSLATIONS, "n": total[3], **_prf(*total[:3]), "variants": variants(marked[None])}
        )
    return rows
