"""The registry of edit types: XQ-MEval's four MQM error types and AskQE's eight perturbations.

Pure Python (no Django). Each entry is data: what the edit is, its severity, the positions it is injected
at, and — for perturbations — how much of the reference it may change (the "changes more than its type
allows" check reads these limits). SPEC §1 and §2.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.domain.errors import Invalid

MQM = "mqm"
PERTURBATION = "perturbation"
KINDS = (MQM, PERTURBATION)

HEAD = "head"
END = "end"
NONE = "none"


@dataclass(frozen=True)
class ChangeLimit:
    """How much a perturbation may change, counted in words (whitespace tokens).

    For character-unit languages a word is counted as ``CHARS_PER_WORD`` characters, an approximation
    (no word segmenter for zh/ja/lo/th here), so the limits there are deliberately loose."""

    max_inserted: int | None = None  # words the candidate may add (None: no limit)
    max_deleted: int | None = None  # words it may remove
    max_regions: int | None = 2  # changed regions (a two-word misspelling is two regions)
    same_multiset: bool = False  # Word Order: the same units, only reordered


CHARS_PER_WORD = 4


@dataclass(frozen=True)
class EditType:
    name: str
    kind: str
    severity: str
    definition: str
    positions: tuple[str, ...]
    needs_source: bool = False
    limit: ChangeLimit | None = None  # perturbations only


_MQM_TYPES = [
    EditType(
        "Addition",
        MQM,
        "major",
        "extraneous information is inserted: the inserted words add meaning that the English source does not contain",
        (HEAD, END),
    ),
    EditType(
        "Omission",
        MQM,
        "major",
        "a meaningful part of the sentence is left out, so the meaning changes",
        (HEAD, END),
    ),
    EditType(
        "Mistranslation",
        MQM,
        "major",
        "a phrase is replaced by one that changes the meaning; not a trivial substitution such as 1 to 2 or good to bad",
        (HEAD, END),
    ),
    EditType(
        "Untranslated",
        MQM,
        "major",
        "a target phrase is replaced by the corresponding English words of the source, left untranslated; "
        "names of people and places do not count",
        (HEAD, END),
        needs_source=True,
    ),
]

_PERTURBATIONS = [
    EditType(
        "Spelling",
        PERTURBATION,
        "minor",
        "misspell one or two important words",
        (NONE,),
        limit=ChangeLimit(max_inserted=2, max_deleted=2, max_regions=2),
    ),
    EditType(
        "Word Order",
        PERTURBATION,
        "minor",
        "reorder words, the meaning kept",
        (NONE,),
        limit=ChangeLimit(max_regions=None, same_multiset=True),
    ),
    EditType(
        "Synonym",
        PERTURBATION,
        "minor",
        "replace one or two content words by their synonyms",
        (NONE,),
        limit=ChangeLimit(max_inserted=3, max_deleted=3, max_regions=2),
    ),
    EditType(
        "Intensifier",
        PERTURBATION,
        "minor",
        "change the intensity of an adjective or adverb",
        (NONE,),
        limit=ChangeLimit(max_inserted=2, max_deleted=1, max_regions=2),
    ),
    EditType(
        "Expansion (No Impact)",
        PERTURBATION,
        "minor",
        "add one or two words that state what is already implied",
        (NONE,),
        limit=ChangeLimit(max_inserted=3, max_deleted=0, max_regions=2),
    ),
    EditType(
        "Expansion (Impact)",
        PERTURBATION,
        "critical",
        "add words that change the meaning",
        (NONE,),
        limit=ChangeLimit(max_inserted=8, max_deleted=0, max_regions=2),
    ),
    EditType(
        "Omission",
        PERTURBATION,
        "critical",
        "remove one or two words, changing the meaning",
        (NONE,),
        limit=ChangeLimit(max_inserted=0, max_deleted=2, max_regions=2),
    ),
    EditType(
        "Alteration",
        PERTURBATION,
        "critical",
        "negate, or replace a word by its antonym",
        (NONE,),
        limit=ChangeLimit(max_inserted=2, max_deleted=2, max_regions=2),
    ),
]

EDIT_TYPES: dict[tuple[str, str], EditType] = {(t.kind, t.name): t for t in [*_MQM_TYPES, *_PERTURBATIONS]}


class UnknownEditType(Invalid, ValueError):
    code = "unknown_edit_type"


def edit_type(kind: str, name: str) -> EditType:
    try:
        return EDIT_TYPES[(kind, name)]
    except KeyError:
        known = ", ".join(t for k, t in EDIT_TYPES if k == kind) or "none"
        raise UnknownEditType(f"unknown {kind} type {name!r} (known: {known})") from None


def types_of(kind: str) -> list[EditType]:
    if kind not in KINDS:
        raise UnknownEditType(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return [t for (k, _), t in EDIT_TYPES.items() if k == kind]


def resolve_types(kind: str, names: list[str] | None) -> list[EditType]:
    """The requested types of a kind (all of them when ``names`` is empty), validated."""
    if not names:
        return types_of(kind)
    return [edit_type(kind, name) for name in names]
