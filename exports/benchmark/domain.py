"""Merging accepted single-error candidates into pseudo translations (SPEC §6). Pure Python (no Django).

For one gold pair, every combination of ``k = 1…max_errors`` pool candidates whose spans pairwise do not
conflict is spliced into the reference; level 0 is the reference itself. Spans are in reference units
(``core.domain.units``). A candidate that cannot be placed is excluded with its reason, never dropped silently.

Enumeration: candidates sorted by span start. With ``a.start <= b.start`` two spans are compatible iff
``a.end < b.start`` (``core.domain.units.spans_conflict``), so a set sorted by start is conflict-free iff each
consecutive pair is — compatibility along a chain is transitive because ``b.start <= b.end``. Each
candidate's compatible successors are therefore a suffix of the sorted list (found by bisection), and a
depth-first walk visits exactly the valid combinations, never a conflicting prefix.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from core.domain.languages import CHAR, unit_of
from core.domain.units import CLOSE_TAG, OPEN_TAG, Edit, outside_matches, split_units

MQM_MAJOR_PENALTY = 5  # one major error (Freitag et al. 2021)
DEFAULT_MAX_ERRORS = 5


@dataclass(frozen=True)
class PoolCandidate:
    """One accepted candidate of a gold pair, as the merger needs it.

    ``label`` is a name stable across databases (e.g. ``Addition.head``) used in triplet ids and files;
    ``id`` is the database id (or any unique, orderable key). ``text`` (the whole candidate, without markup)
    is checked against the reference outside the span when given."""

    id: int | str
    error_type: str
    edit: Edit
    label: str = ""
    text: str | None = None


@dataclass(frozen=True)
class Exclusion:
    candidate_id: int | str
    label: str
    error_type: str
    reason: str


@dataclass(frozen=True)
class SpanRecord:
    """One edit of a pseudo translation: its span in the reference's units and in its own units."""

    candidate_id: int | str
    label: str
    error_type: str
    ref_start: int
    ref_end: int
    mt_start: int
    mt_end: int


@dataclass(frozen=True)
class Pseudo:
    level: int
    candidate_ids: tuple  # in span order
    labels: tuple[str, ...]  # in span order
    error_types: tuple[str, ...]  # in span order
    text: str
    marked_text: str
    spans: tuple[SpanRecord, ...]

    @property
    def mqm_penalty(self) -> int:
        return MQM_MAJOR_PENALTY * self.level

    @property
    def key(self) -> str:
        """Sorted constituent candidate ids ('' for the reference)."""
        return "-".join(str(i) for i in sorted(self.candidate_ids, key=_id_order))

    @property
    def name(self) -> str:
        """Stable name inside the gold pair: constituent labels in span order, 'reference' for level 0."""
        return "+".join(self.labels) if self.labels else "reference"


@dataclass
class SegmentMerge:
    pseudo_translations: list[Pseudo] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    placed: list[PoolCandidate] = field(default_factory=list)

    def count_by_level(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for p in self.pseudo_translations:
            counts[p.level] = counts.get(p.level, 0) + 1
        return counts


def _id_order(value):
    # Integers sort numerically, strings lexicographically after them: deterministic for mixed ids.
    return (0, value, "") if isinstance(value, int) else (1, 0, str(value))


def placement_problem(reference_units: Sequence[str], reference: str, candidate: PoolCandidate, language: str) -> str | None:
    """Why ``candidate`` cannot be placed into the reference, or None when it can."""
    edit = candidate.edit
    n = len(reference_units)
    if not 0 <= edit.start <= edit.end <= n:
        return f"span [{edit.start}, {edit.end}) lies outside the reference ({n} units)"
    if unit_of(language) != CHAR and any(not u or any(ch.isspace() for ch in u) for u in edit.replacement):
        return "the edited text's units are not whitespace tokens"
    if unit_of(language) == CHAR and any(len(u) != 1 for u in edit.replacement):
        return "the edited text's units are not single characters"
    if tuple(reference_units[edit.start : edit.end]) == tuple(edit.replacement):
        return "the edit changes nothing"
    if candidate.text is not None:
        cand_units = split_units(candidate.text, language)
        tail = n - edit.end
        if not outside_matches(reference, candidate.text, edit, language):
            return f"the candidate's text outside span [{edit.start}, {edit.end}) differs from the reference: " + _outside_difference(
                reference_units, cand_units, edit
            )
        if tuple(cand_units[edit.start : len(cand_units) - tail]) != tuple(edit.replacement):
            return "the candidate's text inside the span differs from its recorded edit"
    return None


def _outside_difference(ref: Sequence[str], cand: Sequence[str], edit: Edit) -> str:
    """The first unit outside the span where candidate and reference differ, for the exclusion report."""
    for i in range(edit.start):
        if i >= len(cand) or cand[i] != ref[i]:
            return f"unit {i} before the span: reference {ref[i]!r}, candidate {cand[i] if i < len(cand) else None!r}"
    tail = len(ref) - edit.end
    for j in range(1, tail + 1):
        if j > len(cand) - edit.start or cand[-j] != ref[-j]:
            got = cand[-j] if j <= len(cand) - edit.start else None
            return f"unit {len(ref) - j} after the span: reference {ref[-j]!r}, candidate {got!r}"
    return "lengths differ"


def place_candidates(
    reference: str, language: str, candidates: Iterable[PoolCandidate]
) -> tuple[list[PoolCandidate], list[Exclusion]]:
    """Split a pool into placeable candidates (sorted by span) and exclusions with their reasons."""
    ref_units = split_units(reference, language)
    placeable: list[PoolCandidate] = []
    exclusions: list[Exclusion] = []
    for cand in sorted(candidates, key=lambda c: _id_order(c.id)):
        problem = placement_problem(ref_units, reference, cand, language)
        if problem:
            exclusions.append(Exclusion(cand.id, cand.label, cand.error_type, problem))
        else:
            placeable.append(cand)
    placeable.sort(key=lambda c: (c.edit.start, c.edit.end, _id_order(c.id)))
    return placeable, exclusions


def merge_segment(
    reference: str,
    language: str,
    candidates: Iterable[PoolCandidate],
    max_errors: int = DEFAULT_MAX_ERRORS,
    *,
    placed: tuple[list[PoolCandidate], list[Exclusion]] | None = None,
) -> SegmentMerge:
    """All pseudo translations of one gold pair: level 0 (the reference) then every valid combination of
    1…max_errors placeable candidates, in a deterministic order (level, then span order). ``placed`` is the
    result of ``place_candidates`` when the caller already has it."""
    if max_errors < 0:
        raise ValueError("max_errors must be >= 0")
    ref_units = split_units(reference, language)
    placeable, exclusions = placed if placed is not None else place_candidates(reference, language, candidates)
    result = SegmentMerge(exclusions=list(exclusions), placed=list(placeable))

    starts = [c.edit.start for c in placeable]
    # First compatible successor of each candidate: the first start strictly after its end.
    successor = [bisect.bisect_right(starts, c.edit.end) for c in placeable]
    is_char = unit_of(language) == CHAR

    by_level: list[list[tuple[int, ...]]] = [[] for _ in range(max_errors + 1)]

    def walk(chain: list[int], first: int) -> None:
        for j in range(first, len(placeable)):
            chain.append(j)
            by_level[len(chain)].append(tuple(chain))
            if len(chain) < max_errors:
                walk(chain, successor[j])
            chain.pop()

    if max_errors >= 1:
        walk([], 0)

    result.pseudo_translations.append(Pseudo(0, (), (), (), reference, reference, ()))
    for level in range(1, max_errors + 1):
        for combo in by_level[level]:
            result.pseudo_translations.append(_splice(ref_units, [placeable[i] for i in combo], is_char))
    return result


def _splice(ref_units: Sequence[str], chosen: Sequence[PoolCandidate], is_char: bool) -> Pseudo:
    """The reference with the (sorted, compatible) edits applied, its marked text and span records."""
    joiner = "" if is_char else " "
    plain: list[str] = []  # pieces of the plain text, in order
    marked: list[str] = []
    spans: list[SpanRecord] = []
    cursor = 0
    shift = 0  # own position − reference position
    for cand in chosen:
        e = cand.edit
        between = joiner.join(ref_units[cursor : e.start])
        inner = joiner.join(e.replacement)
        if between:
            plain.append(between)
            marked.append(between)
        if inner:
            plain.append(inner)
        marked.append(OPEN_TAG + inner + CLOSE_TAG)
        own_start = e.start + shift
        own_end = own_start + len(e.replacement)
        spans.append(SpanRecord(cand.id, cand.label, cand.error_type, e.start, e.end, own_start, own_end))
        shift += len(e.replacement) - (e.end - e.start)
        cursor = e.end
    tail = joiner.join(ref_units[cursor:])
    if tail:
        plain.append(tail)
        marked.append(tail)
    return Pseudo(
        level=len(chosen),
        candidate_ids=tuple(c.id for c in chosen),
        labels=tuple(c.label for c in chosen),
        error_types=tuple(c.error_type for c in chosen),
        text=joiner.join(plain),
        marked_text=joiner.join(marked),
        spans=tuple(spans),
    )


def count_valid_combinations(spans: Sequence[tuple[int, int]], max_errors: int = DEFAULT_MAX_ERRORS) -> dict[int, int]:
    """Number of conflict-free k-combinations per k (1…max_errors), by dynamic programming over the
    sorted spans. Cheap enough for a counts table without materialising the texts."""
    ordered = sorted(spans)
    starts = [s for s, _ in ordered]
    n = len(ordered)
    successor = [bisect.bisect_right(starts, e) for _, e in ordered]
    # ways[i][k]: chains of length k starting at i.
    ways = [[0] * (max_errors + 1) for _ in range(n + 1)]
    suffix = [[0] * (max_errors + 1) for _ in range(n + 2)]  # suffix sums over i of ways[i][k]
    for i in range(n - 1, -1, -1):
        ways[i][1] = 1 if max_errors >= 1 else 0
        for k in range(2, max_errors + 1):
            ways[i][k] = suffix[successor[i]][k - 1]
        for k in range(1, max_errors + 1):
            suffix[i][k] = suffix[i + 1][k] + ways[i][k]
    return {k: suffix[0][k] for k in range(1, max_errors + 1)}


def counts_table(levels_per_pair: dict[str, dict[object, dict[int, int]]], max_level: int = DEFAULT_MAX_ERRORS) -> dict:
    """Counts per direction and level with the minimum and maximum number of pseudo translations per gold
    pair (the paper's Tables 4 and 8). ``levels_per_pair[direction][pair][level] = n``; a pair without any
    pseudo translation at a level counts as 0 there. Levels are string keys so the table survives JSON."""
    table: dict = {}
    for direction in sorted(levels_per_pair):
        pairs = levels_per_pair[direction]
        levels = {}
        for level in range(max_level + 1):
            per_pair = [pairs[p].get(level, 0) for p in pairs]
            levels[str(level)] = {
                "total": sum(per_pair),
                "min_per_pair": min(per_pair) if per_pair else 0,
                "max_per_pair": max(per_pair) if per_pair else 0,
            }
        totals = [sum(pairs[p].values()) for p in pairs]
        table[direction] = {
            "gold_pairs": len(pairs),
            "levels": levels,
            "total": sum(totals),
            "min_per_pair": min(totals) if totals else 0,
            "max_per_pair": max(totals) if totals else 0,
        }
    return table
