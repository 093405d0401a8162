"""Merging accepted single-error candidates into pseudo translations (SPEC §6). Pure Python (no Django).

For one gold pair, every combination of ``k = 1…max_errors`` pool candidates whose spans pairwise do not
conflict is spliced into the reference; level 0 is the reference itself. Spans are in reference units
(``core.domain.units``). A candidate that cannot be placed is excluded with its reason, never dropped silently.

Enumeration: candidates sorted by span start. With ``a.start <= b.start`` two spans are compatible iff
``a.end < b.start`` (``core.domain.units.spans_conflict``), so a set sorted by start is conflict-free iff each
consecutive pair is — compatibility along a chain is transitive because ``b.start <= b.end``. Each
candidate's compatible successors are therefore a suffix of the sorted list (found by bisection), and a
depth-first walk visits exactly the valid combinations, never a conflicting prefix.

Transplanting (issue 12): a candidate whose text outside its marked span differs from the reference only
by *drift* — punctuation (a quote mark, a comma, a bracket), whitespace or character width (NFKC) — is
placed all the same: its edit (the units inside the span) is transplanted onto the reference, whose own
text stands everywhere else; every pseudo translation it enters carries the flag ``transplanted``, and the
build records the drift and the span used (``exports.models.CandidatePlacement``). The edit is located by
the units that carry content: the candidate's content before the span must be the reference's first
content units, its content after the span the reference's last ones. Where any content differs outside
the span, the edit cannot be located and the candidate is excluded with the reason.
"""

from __future__ import annotations

import bisect
import difflib
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from core.domain.languages import CHAR, unit_of
from core.domain.units import CLOSE_TAG, OPEN_TAG, Edit, outside_matches, split_units

MQM_MAJOR_PENALTY = 5  # one major error (Freitag et al. 2021)
DEFAULT_MAX_ERRORS = 5
TRANSPLANTED = "transplanted"  # the flag of pseudo translations (and spans) holding a candidate placed despite drift


def exclusion_note(reason: str, review_reason: str) -> str:
    """The ``reason`` column of the excluded candidates (page, CSV, release file): the merge's reason and the
    review outcome the candidate holds, in the words releases have always used, so their bytes stay the same."""
    return f"merge: cannot be placed: {reason} (was accepted{': ' + review_reason if review_reason else ''})"


@dataclass(frozen=True)
class PoolCandidate:
    """One accepted candidate of a gold pair, as the merger needs it.

    ``label`` is a name stable across databases (e.g. ``Addition.head``) used in triplet ids and files;
    ``id`` is the database id (or any unique, orderable key). ``text`` (the whole candidate, without markup)
    is checked against the reference outside the span when given: the candidate's own units in the span
    are ``text[edit.start : edit.start + len(edit.replacement)]`` (how spans are read from markup and from
    diffs). ``drift`` is set by placement when the edit was transplanted (see the module docstring)."""

    id: int | str
    error_type: str
    edit: Edit
    label: str = ""
    text: str | None = None
    drift: str = ""

    @property
    def flags(self) -> tuple[str, ...]:
        return (TRANSPLANTED,) if self.drift else ()


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
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pseudo:
    level: int
    candidate_ids: tuple  # in span order
    labels: tuple[str, ...]  # in span order
    error_types: tuple[str, ...]  # in span order
    text: str
    marked_text: str
    spans: tuple[SpanRecord, ...]
    flags: tuple[str, ...] = ()  # sorted union of the spans' flags

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


def placement_problem(
    reference_units: Sequence[str], reference: str, candidate: PoolCandidate, language: str
) -> str | None:
    """Why ``candidate`` cannot be placed into the reference, or None when it can (possibly transplanted)."""
    placed = place_candidate(reference_units, reference, candidate, language)
    return placed if isinstance(placed, str) else None


def place_candidate(
    reference_units: Sequence[str], reference: str, candidate: PoolCandidate, language: str
) -> PoolCandidate | str:
    """The candidate as it is placed into the reference — itself, or with its edit relocated and ``drift``
    set when its text outside the span drifts from the reference — or the reason it cannot be placed."""
    edit = candidate.edit
    n = len(reference_units)
    if unit_of(language) != CHAR and any(not u or any(ch.isspace() for ch in u) for u in edit.replacement):
        return "the edited text's units are not whitespace tokens"
    if unit_of(language) == CHAR and any(len(u) != 1 for u in edit.replacement):
        return "the edited text's units are not single characters"
    in_range = 0 <= edit.start <= edit.end <= n
    placed = candidate
    if candidate.text is not None and not (in_range and outside_matches(reference, candidate.text, edit, language)):
        # Drift outside the span (its own units in the span: from ``edit.start``, as markup and diffs give them).
        cand_units = split_units(candidate.text, language)
        own_end = edit.start + len(edit.replacement)
        if (
            edit.start < 0
            or own_end > len(cand_units)
            or tuple(cand_units[edit.start : own_end]) != tuple(edit.replacement)
        ):
            if not in_range:
                return f"span [{edit.start}, {edit.end}) lies outside the reference ({n} units)"
            return (
                f"the candidate's text outside span [{edit.start}, {edit.end}) differs from the reference ("
                + _outside_difference(reference_units, cand_units, edit)
                + ") and its recorded edit is not where the span starts in it: the edit cannot be located"
            )
        located = locate_edit(
            reference_units, cand_units, edit.start, own_end, "" if unit_of(language) == CHAR else " "
        )
        if isinstance(located, str):
            return (
                f"the candidate's text outside span [{edit.start}, {edit.end}) differs from the reference beyond punctuation, "
                f"whitespace and character width ({located}): the edit cannot be located"
            )
        start, end, drift = located
        if not drift:  # the text outside matches, but around another span than the recorded one
            drift = f"the recorded span [{edit.start}, {edit.end}) is [{start}, {end}) in the reference"
        placed = replace(candidate, edit=Edit(start, end, tuple(edit.replacement)), drift=drift)
    elif not in_range:
        return f"span [{edit.start}, {edit.end}) lies outside the reference ({n} units)"
    elif candidate.text is not None:
        cand_units = split_units(candidate.text, language)
        if tuple(cand_units[edit.start : len(cand_units) - (n - edit.end)]) != tuple(edit.replacement):
            return "the candidate's text inside the span differs from its recorded edit"
    if tuple(reference_units[placed.edit.start : placed.edit.end]) == tuple(placed.edit.replacement):
        return "the edit changes nothing"
    return placed


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


def content_key(unit: str) -> str:
    """A unit with drift removed: NFKC (full-width forms become their ASCII/half-width forms), then without
    punctuation (Unicode category P*: quotes, brackets, commas, stops, dashes) and whitespace. Units whose
    key is empty carry no content and may appear, vanish or change outside a span as drift."""
    return "".join(
        ch
        for ch in unicodedata.normalize("NFKC", unit)
        if not (ch.isspace() or unicodedata.category(ch).startswith("P"))
    )


def locate_edit(
    ref: Sequence[str], cand: Sequence[str], own_start: int, own_end: int, joiner: str = " "
) -> tuple[int, int, str] | str:
    """Where the candidate's edit ``cand[own_start:own_end]`` lies in the reference when the text around it
    differs from the reference by drift only: ``(start, end, drift description)`` in reference units, or
    the first content difference (a string) when the edit cannot be located.

    The content units (non-empty ``content_key``) before the edit must equal the reference's first ones
    and those after it the reference's last ones; the span then runs from just after the last content unit
    of the prefix to just before the first content unit of the suffix, less the content-free units that
    both texts have there (a stop before the span stays outside it when the candidate keeps one). ``joiner``
    joins units in the drift description ('' for character units)."""
    pre, post = cand[:own_start], cand[own_end:]
    ref_keys = [content_key(u) for u in ref]
    content = [i for i, k in enumerate(ref_keys) if k]
    pre_keys = [k for k in map(content_key, pre) if k]
    post_keys = [k for k in map(content_key, post) if k]
    m, p = len(pre_keys), len(post_keys)
    for i, (want, got) in enumerate(zip((ref_keys[j] for j in content[:m]), pre_keys)):
        if want != got:
            return f"before the span: reference {ref[content[i]]!r}, candidate {_nth_content(pre, i)!r}"
    if m > len(content):
        return f"before the span: the candidate has {m} content units, the reference {len(content)} in all"
    if m + p > len(content):
        return f"the candidate has {m + p} content units outside the span, the reference {len(content)} in all"
    tail_ref = content[len(content) - p :]
    for i, (want, got) in enumerate(zip((ref_keys[j] for j in tail_ref), post_keys)):
        if want != got:
            return f"after the span: reference {ref[tail_ref[i]]!r}, candidate {_nth_content(post, i)!r}"
    start = content[m - 1] + 1 if m else 0
    trailing = len(pre) - (max(i for i, u in enumerate(pre) if content_key(u)) + 1 if m else 0)
    while trailing and start < len(ref) and not ref_keys[start]:
        start, trailing = start + 1, trailing - 1
    end = tail_ref[0] if p else len(ref)
    leading = min(i for i, u in enumerate(post) if content_key(u)) if p else len(post)
    while leading and end > start and not ref_keys[end - 1]:
        end, leading = end - 1, leading - 1
    drift = "; ".join(
        part
        for part in (
            _describe_drift("before the span", ref[:start], pre, joiner),
            _describe_drift("after the span", ref[end:], post, joiner),
        )
        if part
    )
    return start, end, drift


def _nth_content(units: Sequence[str], i: int) -> str:
    return [u for u in units if content_key(u)][i]


def _describe_drift(where: str, ref: Sequence[str], cand: Sequence[str], joiner: str) -> str:
    """The differing runs of two unit sequences that differ by drift only: ``'existante.' → 'existante,'``,
    ``'"' added``, ``'"' dropped``."""
    matcher = difflib.SequenceMatcher(a=list(ref), b=list(cand), autojunk=False)
    parts = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        a, b = joiner.join(ref[i1:i2]), joiner.join(cand[j1:j2])
        if tag == "replace":
            parts.append(f"{a!r} → {b!r}")
        elif tag == "insert":
            parts.append(f"{b!r} added")
        elif tag == "delete":
            parts.append(f"{a!r} dropped")
    return f"{where}: " + ", ".join(parts) if parts else ""


def place_candidates(
    reference: str, language: str, candidates: Iterable[PoolCandidate]
) -> tuple[list[PoolCandidate], list[Exclusion]]:
    """Split a pool into placeable candidates (sorted by span; a transplanted one with its located edit and
    its drift) and exclusions with their reasons."""
    ref_units = split_units(reference, language)
    placeable: list[PoolCandidate] = []
    exclusions: list[Exclusion] = []
    for cand in sorted(candidates, key=lambda c: _id_order(c.id)):
        placed = place_candidate(ref_units, reference, cand, language)
        if isinstance(placed, str):
            exclusions.append(Exclusion(cand.id, cand.label, cand.error_type, placed))
        else:
            placeable.append(placed)
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
        spans.append(SpanRecord(cand.id, cand.label, cand.error_type, e.start, e.end, own_start, own_end, cand.flags))
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
        flags=tuple(sorted({f for c in chosen for f in c.flags})),
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
    for direction_code in sorted(levels_per_pair):
        pairs = levels_per_pair[direction_code]
        levels = {}
        for level in range(max_level + 1):
            per_pair = [pairs[p].get(level, 0) for p in pairs]
            levels[str(level)] = {
                "total": sum(per_pair),
                "min_per_pair": min(per_pair) if per_pair else 0,
                "max_per_pair": max(per_pair) if per_pair else 0,
            }
        totals = [sum(pairs[p].values()) for p in pairs]
        table[direction_code] = {
            "gold_pairs": len(pairs),
            "levels": levels,
            "total": sum(totals),
            "min_per_pair": min(totals) if totals else 0,
            "max_per_pair": max(totals) if totals else 0,
        }
    return table


def counts_table_rows(counts: dict) -> tuple[list[int], list[tuple[str, dict, list[dict]]]]:
    """A ``counts_table`` laid out for printing: its levels, and per direction in order the direction's row
    with its cells (``{total, min_per_pair, max_per_pair}``, one per level)."""
    levels = sorted({int(k) for d in counts.values() for k in d["levels"]})
    rows = [(d, counts[d], [counts[d]["levels"][str(k)] for k in levels]) for d in sorted(counts)]
    return levels, rows
