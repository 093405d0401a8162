"""Span units and edits in reference units. Pure Python (no Django).

A span is ``[start, end)`` in units of the *reference* (characters for zh/ja/lo/th/my/km/bo, whitespace
tokens otherwise; SPEC glossary). An insertion has ``start == end``. An *edit* is a span plus the
candidate's replacement units. Spans are always computed from text (diff or markup positions), never
trusted from a model's own markup alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.domain.errors import Invalid
from core.domain.languages import CHAR, unit_of

OPEN_TAG = "<v>"
CLOSE_TAG = "</v>"
_TAG_RE = re.compile(r"</?v>")


class MarkupError(Invalid, ValueError):
    """The ``<v>…</v>`` markup of a candidate is malformed (none, several or unbalanced regions)."""

    code = "markup_invalid"


def split_units(text: str, language: str) -> list[str]:
    if unit_of(language) == CHAR:
        return list(text)
    return text.split()


def join_units(units: Sequence[str], language: str) -> str:
    return ("" if unit_of(language) == CHAR else " ").join(units)


@dataclass(frozen=True)
class Edit:
    """One contiguous edit of a reference: ``ref[start:end]`` replaced by ``replacement`` (units)."""

    start: int
    end: int
    replacement: tuple[str, ...]

    @property
    def is_insertion(self) -> bool:
        return self.start == self.end

    @property
    def is_deletion(self) -> bool:
        return not self.replacement

    def candidate_span(self) -> tuple[int, int]:
        """The edit's span in the candidate's own units (valid for a single-edit candidate)."""
        return self.start, self.start + len(self.replacement)


def diff_edit(reference: str, candidate: str, language: str) -> Edit | None:
    """The single edit that turns ``reference`` into ``candidate``, by longest common prefix and suffix in
    the language's unit. ``None`` when the two are identical in units."""
    ref = split_units(reference, language)
    cand = split_units(candidate, language)
    return diff_units(ref, cand)


def common_ends(a: Sequence, b: Sequence) -> tuple[int, int] | None:
    """The length of the longest common prefix of ``a`` and ``b``, and of their longest common suffix in what
    follows it (what differs is ``a[prefix:len(a) - suffix]`` against ``b[prefix:len(b) - suffix]``). None
    when the two are equal."""
    limit = min(len(a), len(b))
    prefix = 0
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    if prefix == len(a) == len(b):
        return None
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    return prefix, suffix


def diff_units(ref: Sequence[str], cand: Sequence[str]) -> Edit | None:
    ends = common_ends(ref, cand)
    if ends is None:
        return None
    prefix, suffix = ends
    return Edit(prefix, len(ref) - suffix, tuple(cand[prefix : len(cand) - suffix]))


# Unit pairs difflib may compare for one diff (its cost grows with len(a) x len(b): 20k tokens took 34 s).
# Sentences stay far below it and are aligned exactly as before; past it the common prefix and suffix
# (linear) are aligned first and difflib sees only the middle; a middle still past it fails the item.
DIFF_BUDGET = 1_000_000


class DiffTooLarge(Invalid, ValueError):
    """Two texts differ over more units than one diff may compare; the message says how many."""

    code = "diff_too_large"


def diff_opcodes(
    ref: Sequence[str], cand: Sequence[str], budget: int = DIFF_BUDGET, exact_within: int | None = None
) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes (``autojunk=False``) of two unit lists, in bounded time: exact difflib where
    ``len(ref) * len(cand)`` is within ``exact_within`` (default: ``budget``); else the common prefix and
    suffix as equal runs around difflib's opcodes of the middle; ``DiffTooLarge`` when the middle is past
    ``budget``."""
    import difflib

    if len(ref) * len(cand) <= (budget if exact_within is None else exact_within):
        return difflib.SequenceMatcher(a=ref, b=cand, autojunk=False).get_opcodes()
    limit = min(len(ref), len(cand))
    prefix = 0
    while prefix < limit and ref[prefix] == cand[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and ref[len(ref) - 1 - suffix] == cand[len(cand) - 1 - suffix]:
        suffix += 1
    a, b = ref[prefix : len(ref) - suffix], cand[prefix : len(cand) - suffix]
    if len(a) * len(b) > budget:
        raise DiffTooLarge(
            f"the texts differ over {len(a)} and {len(b)} units, more than one diff may compare ({budget} unit pairs)"
        )
    opcodes = [("equal", 0, prefix, 0, prefix)] if prefix else []
    opcodes += [
        (tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    ]
    if suffix:
        opcodes.append(("equal", len(ref) - suffix, len(ref), len(cand) - suffix, len(cand)))
    return opcodes


def count_edited_regions(reference: str, candidate: str, language: str) -> int:
    """Number of maximal changed regions between reference and candidate (0 when identical), from an
    alignment of units (``diff_opcodes``). Used by the 'more than one edited region' check."""
    ref = split_units(reference, language)
    cand = split_units(candidate, language)
    return sum(1 for tag, *_ in diff_opcodes(ref, cand) if tag != "equal")


def apply_edit(reference: str, edit: Edit, language: str) -> str:
    ref = split_units(reference, language)
    if not 0 <= edit.start <= edit.end <= len(ref):
        raise ValueError(f"span [{edit.start}, {edit.end}) outside a reference of {len(ref)} units")
    return join_units([*ref[: edit.start], *edit.replacement, *ref[edit.end :]], language)


def mark_edit(reference: str, edit: Edit, language: str) -> str:
    """The candidate text with its edited region marked ``<v>…</v>`` (an Omission shows ``<v></v>``)."""
    ref = split_units(reference, language)
    inner = join_units(edit.replacement, language)
    parts = [
        join_units(ref[: edit.start], language),
        OPEN_TAG + inner + CLOSE_TAG,
        join_units(ref[edit.end :], language),
    ]
    if unit_of(language) == CHAR:
        return "".join(parts)
    return " ".join(p for p in parts if p)


@dataclass(frozen=True)
class MarkedCandidate:
    """A candidate read from ``<v>…</v>`` markup."""

    text: str  # the candidate with the tags removed
    edit: Edit  # the marked span, in reference units
    outside_matches_reference: bool  # False when text outside the marked region differs from the reference
    outside_diff: str  # human-readable description of the first difference outside the span ('' when none)


def strip_markup(marked: str) -> str:
    return _TAG_RE.sub("", marked)


def find_marked_region(marked: str) -> tuple[str, str, str]:
    """Split marked text into (before, inside, after). Exactly one balanced ``<v>…</v>`` is required."""
    tags = [(m.start(), m.group()) for m in _TAG_RE.finditer(marked)]
    if not tags:
        raise MarkupError("no <v>…</v> region")
    opens = [pos for pos, tag in tags if tag == OPEN_TAG]
    closes = [pos for pos, tag in tags if tag == CLOSE_TAG]
    if len(opens) != len(closes):
        raise MarkupError(f"unbalanced tags: {len(opens)} <v> and {len(closes)} </v>")
    if len(opens) > 1:
        raise MarkupError(f"{len(opens)} <v>…</v> regions, expected exactly one")
    if closes[0] < opens[0]:
        raise MarkupError("</v> comes before <v>")
    i, j = opens[0], closes[0]
    return marked[:i], marked[i + len(OPEN_TAG) : j], marked[j + len(CLOSE_TAG) :]


def parse_marked(marked: str, reference: str, language: str) -> MarkedCandidate:
    """Read a candidate with one ``<v>…</v>`` region, and express the region as an edit of ``reference``.

    Positions come from counting units before and after the region. For token languages a tag that falls
    inside a token widens the region to whole tokens. When the text outside the region differs from the
    reference the candidate is still returned, flagged (a locality check, SPEC §6): the reviewer and the
    merger decide, nothing is dropped silently."""
    before, inside, after = find_marked_region(marked)
    text = before + inside + after
    ref_units = split_units(reference, language)
    if unit_of(language) == CHAR:
        pre, mid, post = list(before), list(inside), list(after)
    else:
        pre, mid, post = before.split(), inside.split(), after.split()
        # A tag inside a token: glue the split token to the region so spans stay in whole tokens.
        if pre and mid and not before[-1:].isspace() and not inside[:1].isspace():
            mid = [pre.pop() + mid[0], *mid[1:]]
        elif pre and not mid and post and not before[-1:].isspace() and not after[:1].isspace():
            mid = [pre.pop() + post.pop(0)]
        if post and mid and not after[:1].isspace() and not inside[-1:].isspace():
            mid = [*mid[:-1], mid[-1] + post.pop(0)]
    start = len(pre)
    end = len(ref_units) - len(post)
    problems: list[str] = []
    if end < start:
        problems.append(
            f"the text outside the region is longer than the reference ({len(pre)} + {len(post)} > {len(ref_units)} units)"
        )
        end = start
    if ref_units[:start] != pre:
        problems.append(_first_difference("before", ref_units[:start], pre))
    if ref_units[end:] != post:
        problems.append(_first_difference("after", ref_units[end:], post))
    edit = Edit(start, end, tuple(mid))
    return MarkedCandidate(
        text=text, edit=edit, outside_matches_reference=not problems, outside_diff="; ".join(p for p in problems if p)
    )


def _first_difference(where: str, expected: Sequence[str], got: Sequence[str]) -> str:
    for i, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return f"{where} the span, unit {i}: reference {a!r}, candidate {b!r}"
    return f"{where} the span: reference has {len(expected)} units, candidate {len(got)}"


def outside_matches(reference: str, candidate: str, edit: Edit, language: str) -> bool:
    """True when ``candidate`` equals ``reference`` outside ``edit``'s span (so the edit can be placed)."""
    ref = split_units(reference, language)
    cand = split_units(candidate, language)
    tail = len(ref) - edit.end
    return (
        edit.start <= len(cand)
        and tail <= len(cand) - edit.start
        and cand[: edit.start] == ref[: edit.start]
        and cand[len(cand) - tail :] == ref[edit.end :]
    )


# ---- the head/end halves of a reference (SPEC §1) -------------------------------------------------


def half_boundary(reference: str, language: str) -> int:
    """Units in the first half: ``n // 2``."""
    return len(split_units(reference, language)) // 2


def halves_markup(reference: str, language: str) -> str:
    """``<head>first half</head> <end>second half</end>`` (no space between halves for character units)."""
    units = split_units(reference, language)
    mid = len(units) // 2
    sep = "" if unit_of(language) == CHAR else " "
    return f"<head>{join_units(units[:mid], language)}</head>{sep}<end>{join_units(units[mid:], language)}</end>"


def position_of_edit(edit: Edit, reference: str, language: str) -> str:
    """Which half an edit lies in: 'head', 'end', or 'both' when it crosses the boundary."""
    mid = half_boundary(reference, language)
    if edit.is_insertion:
        # An insertion exactly at the boundary belongs to either half.
        return "head" if edit.start < mid else ("end" if edit.start > mid else "both")
    if edit.end <= mid:
        return "head"
    if edit.start >= mid:
        return "end"
    return "both"


def spans_conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """SPEC §6: with ``a.start <= b.start`` (ends exclusive), compatible iff ``a.end < b.start``; at least
    one unchanged unit must lie between two edits."""
    first, second = sorted([a, b])
    return not first[1] < second[0]
