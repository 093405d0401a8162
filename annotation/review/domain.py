"""Review rules as data: guidelines per error type, reason categories, pool rules, span highlighting and
small statistics. Pure Python (no Django), unit-tested directly. (Rating's Likert dimensions are
``annotation.rating.domain``.)

Source: XQ-MEval Appendix D (acceptance criteria, SPEC §3), a registry keyed by name so a new error type is
one entry, not a branch.
"""

from __future__ import annotations

import random
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from core.domain.languages import CHAR, unit_of

# ---- guidelines per error type (XQ-MEval App. D) -----------------------------------------------------

GENERAL_RULE = (
    "Accept only if the marked edit really is an error of the stated type AND nothing outside the marked "
    "span changed. Grammar may break because of the edit; that is fine."
)


@dataclass(frozen=True)
class Guideline:
    name: str
    summary: str
    accept: tuple[str, ...]
    reject: tuple[str, ...] = ()


GUIDELINES: dict[str, Guideline] = {}


def guideline(g: Guideline) -> Guideline:
    GUIDELINES[g.name.lower()] = g
    return g


guideline(
    Guideline(
        "Addition",
        "The marked words add information that is not in the reference.",
        ("The mark introduces additional meaning, and the rest of the reference is unchanged.",),
        (
            "Only a degree adverb changed (e.g. 'very' → 'extremely'): the meaning is not extended.",
            "Text outside the mark changed.",
        ),
    )
)
guideline(
    Guideline(
        "Omission",
        "A meaningful part of the reference is missing; the deletion point is marked.",
        (
            "The missing part changes the meaning, even if the sentence becomes ungrammatical.",
            "A neighbouring word marked only because punctuation moved with the cut (e.g. 'particulier' → 'particulier,').",
        ),
        ("The missing part changes text outside the mark, or the marked part is not actually missing.",),
    )
)
guideline(
    Guideline(
        "Mistranslation",
        "The marked words are replaced by words that change the meaning.",
        ("Compared with the reference, the marked words convey different words or meaning.",),
        (
            "A trivial substitution that is not a real mistranslation (e.g. 1 → 2, good → bad), or no change in meaning.",
            "Text outside the mark changed.",
        ),
    )
)
guideline(
    Guideline(
        "Untranslated",
        "The marked words are left in English (copied or near-copied from the source).",
        ("The marked words are English copied from the source, or changed but still English.",),
        ("The untranslated words are names of people or places.", "Text outside the mark changed."),
    )
)

FALLBACK_GUIDELINE = Guideline(
    "Other",
    "The candidate contains exactly one edit of the stated type.",
    ("The marked edit is an instance of the stated type and nothing outside the mark changed.",),
    ("The edit is not of the stated type, or text outside the mark changed.",),
)


def guideline_for(error_type: str) -> Guideline:
    return GUIDELINES.get(error_type.lower(), FALLBACK_GUIDELINE)


# ---- reason categories ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reason:
    code: str
    label: str


REJECT_REASONS: tuple[Reason, ...] = (
    Reason("wrong_type", "not an error of this type"),
    Reason("outside_changed", "text outside the mark changed"),
    Reason("no_meaning_change", "meaning not changed (too weak / degree only)"),
    Reason("name_or_place", "untranslated name of a person or place"),
    Reason("bad_span", "mark is on the wrong words"),
    Reason("other", "other (say why in the comment)"),
)
SKIP_REASONS: tuple[Reason, ...] = (
    Reason("unsure", "not sure, needs a second look"),
    Reason("not_native", "outside my language competence"),
    Reason("broken_item", "item is broken or unreadable"),
    Reason("other", "other"),
)


def reason_codes(reasons: Iterable[Reason]) -> set[str]:
    return {r.code for r in reasons}


def reason_label(code: str, reasons: Iterable[Reason] = REJECT_REASONS) -> str:
    """What the screens show for a stored reason code: its label, as the reviewer picked it; a code with no
    label (an imported decision's own wording) as it is."""
    return next((r.label for r in reasons if r.code == code), code)


# ---- pool rules: the candidate's status from its decisions (SPEC §3) --------------------------------

PENDING, ACCEPTED, REJECTED = "pending", "accepted", "rejected"


@dataclass(frozen=True)
class Outcome:
    status: str
    reason: str


# A rule decides a candidate whose reviews are all in and that has no final decision (``pool_outcome``).
PoolRule = Callable[[Sequence[str]], Outcome]
POOL_RULES: dict[str, PoolRule] = {}


def pool_rule(name: str):
    def register(fn: PoolRule) -> PoolRule:
        POOL_RULES[name] = fn
        return fn

    return register


@pool_rule("unanimous")
def _unanimous(decisions: Sequence[str]) -> Outcome:
    accepts = sum(d == "accept" for d in decisions)
    if accepts == len(decisions):
        return Outcome(ACCEPTED, f"{accepts}/{len(decisions)} accepted (unanimous)")
    return Outcome(REJECTED, f"{accepts}/{len(decisions)} accepted; unanimous acceptance required")


@pool_rule("adjudicated")
def _adjudicated(decisions: Sequence[str]) -> Outcome:
    if len(set(decisions)) == 1:
        status = ACCEPTED if decisions[0] == "accept" else REJECTED
        return Outcome(status, f"{len(decisions)}/{len(decisions)} reviewers agree")
    return Outcome(PENDING, "reviewers disagree; awaiting adjudication")


def pool_outcome(rule: str, decisions: Sequence[str], final: str | None, required: int) -> Outcome:
    try:
        fn = POOL_RULES[rule]
    except KeyError:
        raise ValueError(f"unknown pool rule {rule!r}; known: {', '.join(sorted(POOL_RULES))}") from None
    # A final decision (imported screening or an adjudication) decides by itself under every rule.
    if final is not None:
        return Outcome(ACCEPTED if final == "accept" else REJECTED, f"final decision: {final}")
    if len(decisions) < required:
        return Outcome(PENDING, f"{len(decisions)}/{required} reviews")
    return fn(decisions)


# ---- highlighting a stored span (never from markup in the text) -------------------------------------

PLAIN, EDIT, MARKER = "plain", "edit", "marker"


@dataclass(frozen=True)
class Piece:
    text: str
    kind: str = PLAIN  # plain | edit | marker (a zero-width point: deletion or insertion point)


_TOKEN_RE = re.compile(r"\S+")


def _unit_offsets(text: str, language: str) -> list[tuple[int, int]]:
    """Character offsets [a, b) of each unit of ``text`` (same units as core.domain.units.split_units)."""
    if unit_of(language) == CHAR:
        return [(i, i + 1) for i in range(len(text))]
    return [m.span() for m in _TOKEN_RE.finditer(text)]


def highlight(text: str, start: int, end: int, language: str) -> list[Piece]:
    """``text`` cut into pieces with units ``[start, end)`` marked; an empty span becomes a marker at the
    point. Offsets past the end are clamped (the locality check reports such candidates)."""
    offsets = _unit_offsets(text, language)
    n = len(offsets)
    start = max(0, min(start, n))
    end = max(start, min(end, n))
    if start == end:
        at = offsets[start][0] if start < n else len(text)
        if start < n and start > 0 and unit_of(language) != CHAR:
            at = offsets[start - 1][1]  # put the marker right after the previous token, before the space
        pieces = [Piece(text[:at]), Piece("", MARKER), Piece(text[at:])]
    else:
        a, b = offsets[start][0], offsets[end - 1][1]
        pieces = [Piece(text[:a]), Piece(text[a:b], EDIT), Piece(text[b:])]
    return [p for p in pieces if p.text or p.kind == MARKER]


def candidate_span(start: int, edit_units: int) -> tuple[int, int]:
    """The edit's span in the candidate's own units: it starts where the reference span starts."""
    return start, start + edit_units


# ---- statistics for the admin pages -----------------------------------------------------------------


def median(values: Iterable[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def decisions_per_hour(count: int, work_ms_total: int) -> float | None:
    """Throughput while working: decisions divided by the summed time on item (idle time not counted)."""
    if count == 0 or work_ms_total <= 0:
        return None
    return count / (work_ms_total / 3_600_000)


def sample_ids(ids: Iterable[int], size: int, seed: int) -> list[int]:
    """A seeded random sample, independent of the input order (for a later review round)."""
    ordered = sorted(ids)
    return sorted(random.Random(seed).sample(ordered, min(size, len(ordered))))
