"""The offline rule-based editor: real single-span edits, deterministic for a seed. Pure Python (no Django).

What a rule can do without a language model:

* Addition — insert a phrase taken from another reference of the same language;
* Omission — delete a phrase of content words;
* Mistranslation — swap a content word (a short character run for zh/ja/lo/…) for another of the same
  language, drawn from the other references;
* Untranslated — put English words of the source (at the corresponding relative position, names skipped)
  in place of a target phrase;
* perturbations: Spelling (two letters swapped inside an important word), Word Order (two neighbouring
  words swapped), Omission (one or two words removed), Expansion (Impact) (a phrase from another reference
  added). Synonym, Intensifier, Expansion (No Impact) and Alteration need lexical knowledge a rule does
  not have: those are refused with a reason.

Every choice is tried in a seeded random order and kept only if the diff against the reference
(``core.domain.units``) gives one edit in the requested half; otherwise the next choice is tried, and when none
fits, ``RuleRefused`` says why.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from core.domain.edit_types import HEAD, MQM, NONE, PERTURBATION
from core.domain.errors import Invalid
from core.domain.languages import CHAR, unit_of
from core.domain.units import (
    Edit,
    apply_edit,
    count_edited_regions,
    diff_edit,
    half_boundary,
    join_units,
    position_of_edit,
    split_units,
)

MAX_TRIES = 200

# English function words: never the whole of an Untranslated span (they carry no content).
_EN_STOP = frozenset(
    "a an the of to in on at by for from with and or but is are was were be been being it its this that these those "
    "as he she they we you i his her their our your not no so than then there here which who whom whose what when "
    "where why how has have had do does did will would can could may might shall should must also into about over "
    "under after before during while such each other some any all more most very".split()
)


class RuleRefused(Invalid, ValueError):
    """The rule cannot make this edit on this reference; the message says why."""

    code = "rule_refused"


@dataclass
class RuleContext:
    reference: str
    source: str
    language: str
    error_type: str
    position: str
    kind: str
    rng: random.Random
    donors: DonorPool | None = None  # phrases and words of the other references of the same language

    @property
    def is_char(self) -> bool:
        return unit_of(self.language) == CHAR

    @property
    def units(self) -> list[str]:
        return split_units(self.reference, self.language)


def item_rng(seed: int, *key: object) -> random.Random:
    """A generator seeded by the run seed and the item, stable across processes (no hash randomisation)."""
    digest = hashlib.sha256(repr((seed, *key)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# ---- small text helpers ----------------------------------------------------------------------------


def _is_letter(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LM"


def _core(token: str) -> str:
    """A token without surrounding punctuation."""
    return token.strip("".join(ch for ch in set(token) if not _is_letter(ch) and not ch.isdigit()))


def _split_affixes(token: str) -> tuple[str, str, str]:
    start = 0
    while start < len(token) and not (_is_letter(token[start]) or token[start].isdigit()):
        start += 1
    end = len(token)
    while end > start and not (_is_letter(token[end - 1]) or token[end - 1].isdigit()):
        end -= 1
    return token[:start], token[start:end], token[end:]


def _is_content_token(token: str, min_len: int = 4) -> bool:
    core = _core(token)
    return len(core) >= min_len and all(_is_letter(ch) or ch in "-'’" for ch in core)


def _letter_runs(text: str) -> list[tuple[int, int]]:
    """Maximal runs of non-Latin letters (no digits, punctuation or spaces), as character [start, end)."""
    runs, start = [], None
    for i, ch in enumerate(text):
        if _is_letter(ch) and not ch.isascii():
            if start is None:
                start = i
        elif start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(text)))
    return runs


def _half_range(ctx: RuleContext) -> tuple[int, int]:
    n = len(ctx.units)
    mid = half_boundary(ctx.reference, ctx.language)
    if ctx.position == HEAD:
        return 0, mid
    if ctx.position == "end":
        return mid, n
    return 0, n


def _shuffled(ctx: RuleContext, items: Sequence) -> list:
    items = list(items)
    ctx.rng.shuffle(items)
    return items


# ---- what counts as a valid result -------------------------------------------------------------------


@dataclass(frozen=True)
class RuleEdit:
    text: str
    edit: Edit
    note: str  # what the rule did, stored as the candidate's raw output detail


def _accept(ctx: RuleContext, edit: Edit, note: str) -> RuleEdit | None:
    """Apply an edit and keep it only if the diff gives back one region in the requested half."""
    text = apply_edit(ctx.reference, edit, ctx.language)
    found = diff_edit(ctx.reference, text, ctx.language)
    # A swap of two neighbours aligns as two regions (one word moved); it is still one contiguous edit.
    allowed_regions = 2 if ctx.error_type == "Word Order" else 1
    if found is None or count_edited_regions(ctx.reference, text, ctx.language) > allowed_regions:
        return None
    if ctx.kind == MQM and position_of_edit(found, ctx.reference, ctx.language) != ctx.position:
        return None
    if ctx.error_type == "Untranslated" and ctx.is_char and text == ctx.reference:
        return None
    return RuleEdit(text=text, edit=found, note=note)


def _first(ctx: RuleContext, proposals: Iterator[tuple[Edit, str]], why_none: str) -> RuleEdit:
    for tries, (edit, note) in enumerate(proposals):
        if tries >= MAX_TRIES:
            break
        result = _accept(ctx, edit, note)
        if result is not None:
            return result
    raise RuleRefused(why_none)


# ---- candidate positions -----------------------------------------------------------------------------


def _content_positions(ctx: RuleContext) -> list[int]:
    lo, hi = _half_range(ctx)
    units = ctx.units
    return [i for i in range(lo, hi) if _is_content_token(units[i])]


def _clean_window(text: str, i: int, j: int) -> bool:
    """A window that neither starts on nor is followed by a combining mark (Lao/Thai vowel signs, tones)."""
    return unicodedata.category(text[i])[0] != "M" and (j >= len(text) or unicodedata.category(text[j])[0] != "M")


def _char_windows(ctx: RuleContext, width: int) -> list[int]:
    """Start positions of ``width``-character windows of letters inside the requested half."""
    lo, hi = _half_range(ctx)
    text = ctx.reference
    return [
        i
        for start, end in _letter_runs(text)
        for i in range(max(start, lo), min(end, hi) - width + 1)
        if _clean_window(text, i, i + width)
    ]


class DonorPool:
    """Phrases and content words of a language's references, built once per run and language.

    Addition draws its inserted phrase here and Mistranslation its replacement word, always from a
    reference other than the one being edited."""

    def __init__(self, references: Sequence[str], language: str, lengths: Sequence[int] = (2, 3)):
        self.language = language
        self.is_char = unit_of(language) == CHAR
        # (reference index, phrase units); a phrase is never taken from the reference being edited
        self.phrases: dict[int, list[tuple[int, tuple[str, ...]]]] = {n: [] for n in lengths}
        words: dict[str, int] = {}
        for index, text in enumerate(dict.fromkeys(references)):
            if self.is_char:
                for start, end in _letter_runs(text):
                    for n in lengths:
                        for i in range(start, end - n + 1, n):
                            if _clean_window(text, i, i + n):
                                self.phrases[n].append((index, tuple(text[i : i + n])))
                continue
            tokens = text.split()
            for token in tokens:
                if _is_content_token(token):
                    words.setdefault(_core(token), index)
            for n in lengths:
                for i in range(len(tokens) - n + 1):
                    gram = tokens[i : i + n]
                    if all(_is_content_token(t, 2) for t in gram) and all(_core(t) == t for t in gram[:-1]):
                        self.phrases[n].append((index, (*gram[:-1], _core(gram[-1]))))
        self.texts = list(dict.fromkeys(references))
        self.words = sorted(words.items())

    def phrases_for(self, reference: str, lengths: Sequence[int], rng: random.Random, k: int) -> list[list[str]]:
        pool = [p for n in lengths for p in self.phrases.get(n, [])]
        own = set(split_units(reference, self.language))
        out: list[list[str]] = []
        for _ in range(min(len(pool), 8 * k)):
            index, phrase = pool[rng.randrange(len(pool))]
            if self.texts[index] != reference and not (not self.is_char and set(phrase) <= own):
                out.append(list(phrase))
                if len(out) == k:
                    break
        return out

    def words_for(self, reference: str, rng: random.Random, k: int) -> list[str]:
        present = {_core(u).lower() for u in reference.split()}
        out: list[str] = []
        for _ in range(min(len(self.words), 8 * k)):
            word, index = self.words[rng.randrange(len(self.words))]
            if self.texts[index] != reference and word.lower() not in present:
                out.append(word)
                if len(out) == k:
                    break
        return out


# ---- the MQM error types -------------------------------------------------------------------------------


def _addition(ctx: RuleContext) -> RuleEdit:
    lo, hi = _half_range(ctx)
    n = len(ctx.units)
    mid = half_boundary(ctx.reference, ctx.language)
    points = [p for p in range(lo, hi + 1) if (p < mid if ctx.position == HEAD else p > mid) and 0 < p <= n]
    if ctx.is_char:
        # Insert only between two letters or after punctuation-free positions: keeps the sentence readable.
        points = [p for p in points if p == n or _is_letter(ctx.reference[p - 1]) or not ctx.reference[p - 1].isspace()]
    if ctx.donors is None or not ctx.donors.phrases_for(ctx.reference, (2, 3), ctx.rng, 1):
        raise RuleRefused("no other reference of this language to draw an added phrase from")

    def proposals():
        for p in _shuffled(ctx, points):
            for phrase in ctx.donors.phrases_for(ctx.reference, (2, 3), ctx.rng, 3):
                yield Edit(p, p, tuple(phrase)), f"inserted {join_units(phrase, ctx.language)!r} at unit {p}"

    return _first(ctx, proposals(), f"no insertion point in the {ctx.position} half keeps a single edit there")


def _omission(ctx: RuleContext) -> RuleEdit:
    if ctx.is_char:
        starts = [(i, w) for w in (3, 2, 4) for i in _char_windows(ctx, w)]
    else:
        content = _content_positions(ctx)
        lo, hi = _half_range(ctx)
        starts = [
            (i, w)
            for w in (2, 1, 3)
            for i in content
            if i + w <= hi and (w == 1 or _is_content_token(ctx.units[i + w - 1], 2))
        ]
    if not starts:
        raise RuleRefused(f"no content phrase in the {ctx.position} half to delete")

    def proposals():
        for i, w in _shuffled(ctx, starts):
            if w >= len(ctx.units):
                continue
            yield Edit(i, i + w, ()), f"deleted {join_units(ctx.units[i : i + w], ctx.language)!r}"

    return _first(ctx, proposals(), f"no deletion in the {ctx.position} half keeps a single edit there")


def _mistranslation(ctx: RuleContext) -> RuleEdit:
    units = ctx.units
    if ctx.is_char:
        starts = _char_windows(ctx, 2)
        if ctx.donors is None or not starts:
            raise RuleRefused(f"no letter run in the {ctx.position} half or no donor text to swap in")

        def proposals():
            for i in _shuffled(ctx, starts):
                for phrase in ctx.donors.phrases_for(ctx.reference, (2,), ctx.rng, 3):
                    if phrase != units[i : i + 2]:
                        yield (
                            Edit(i, i + 2, tuple(phrase)),
                            f"replaced {''.join(units[i : i + 2])!r} by {''.join(phrase)!r}",
                        )

        return _first(ctx, proposals(), f"no swap in the {ctx.position} half keeps a single edit there")
    positions = _content_positions(ctx)
    if not positions:
        raise RuleRefused(f"no content word in the {ctx.position} half")
    if ctx.donors is None or not ctx.donors.words:
        raise RuleRefused("no other reference of this language to draw a replacement word from")

    def proposals():
        for i in _shuffled(ctx, positions):
            before, core, after = _split_affixes(units[i])
            for word in ctx.donors.words_for(ctx.reference, ctx.rng, 3):
                if core[:1].isupper() != word[:1].isupper():
                    word = word[:1].upper() + word[1:] if core[:1].isupper() else word[:1].lower() + word[1:]
                yield Edit(i, i + 1, (before + word + after,)), f"replaced {core!r} by {word!r}"

    return _first(ctx, proposals(), f"no word swap in the {ctx.position} half keeps a single edit there")


def _english_phrases(ctx: RuleContext) -> list[tuple[float, list[str]]]:
    """English word n-grams of the source (no names, not only function words), with their relative position."""
    tokens = ctx.source.split()
    out = []
    for n in (2, 3, 1):
        for i in range(len(tokens) - n + 1):
            gram = [_core(t) for t in tokens[i : i + n]]
            if not all(g and g.isascii() and g.replace("-", "").isalpha() for g in gram):
                continue
            if any(g[:1].isupper() for g in gram[(1 if i == 0 else 0) :]) or (
                i == 0 and gram[0][:1].isupper() and n == 1
            ):
                continue  # names of people and places do not count (SPEC §1)
            if all(g.lower() in _EN_STOP for g in gram):
                continue
            out.append(
                ((i + n / 2) / max(1, len(tokens)), [g.lower() if j == 0 and i == 0 else g for j, g in enumerate(gram)])
            )
    return out


def _untranslated(ctx: RuleContext) -> RuleEdit:
    phrases = _english_phrases(ctx)
    if not phrases:
        raise RuleRefused("no English content words in the source (only names or function words)")
    n = max(1, len(ctx.units))
    if ctx.is_char:
        targets = [(i, w) for w in (2, 3, 4) for i in _char_windows(ctx, w)]
    else:
        lo, hi = _half_range(ctx)
        targets = [(i, w) for w in (1, 2) for i in _content_positions(ctx) if i + w <= hi]
    if not targets:
        raise RuleRefused(f"no target phrase in the {ctx.position} half to leave untranslated")

    def proposals():
        # Prefer source words at the same relative position as the replaced target phrase.
        for i, w in _shuffled(ctx, targets):
            where = (i + w / 2) / n
            ranked = sorted(phrases, key=lambda item: (abs(item[0] - where), -len(item[1])))[:4]
            for _, words in ranked:
                english = " ".join(words)
                if ctx.is_char:
                    replacement = tuple(english)
                else:
                    _, _, after = _split_affixes(ctx.units[i + w - 1])
                    before, _, _ = _split_affixes(ctx.units[i])
                    replacement = tuple((before + english + after).split())
                yield (
                    Edit(i, i + w, replacement),
                    f"replaced {join_units(ctx.units[i : i + w], ctx.language)!r} by the source words {english!r}",
                )

    return _first(
        ctx, proposals(), f"no target phrase in the {ctx.position} half could take source words as a single edit"
    )


# ---- perturbations a rule can do ------------------------------------------------------------------------


def _spelling(ctx: RuleContext) -> RuleEdit:
    if ctx.is_char:
        raise RuleRefused(f"misspelling {ctx.language} needs a language model (no letters to swap inside a word)")
    positions = [i for i, u in enumerate(ctx.units) if _is_content_token(u, 5)]
    if not positions:
        raise RuleRefused("no word of five letters or more to misspell")

    def proposals():
        for i in _shuffled(ctx, positions):
            before, core, after = _split_affixes(ctx.units[i])
            for j in _shuffled(ctx, range(1, len(core) - 2)):
                if core[j] != core[j + 1]:
                    word = core[:j] + core[j + 1] + core[j] + core[j + 2 :]
                    yield Edit(i, i + 1, (before + word + after,)), f"misspelled {core!r} as {word!r}"

    return _first(ctx, proposals(), "no word could be misspelled as a single edit")


def _word_order(ctx: RuleContext) -> RuleEdit:
    units = ctx.units
    if ctx.is_char:
        raise RuleRefused(f"reordering {ctx.language} words needs a word segmenter or a language model")
    pairs = [
        i
        for i in range(len(units) - 1)
        if _is_content_token(units[i], 2)
        and _is_content_token(units[i + 1], 2)
        and _core(units[i]) == units[i]
        and _core(units[i + 1]) == units[i + 1]
    ]
    if not pairs:
        raise RuleRefused("no two neighbouring words without punctuation to swap")

    def proposals():
        for i in _shuffled(ctx, pairs):
            yield Edit(i, i + 2, (units[i + 1], units[i])), f"swapped {units[i]!r} and {units[i + 1]!r}"

    return _first(ctx, proposals(), "no swap of neighbouring words is a single edit")


def _needs_model(name: str) -> Callable[[RuleContext], RuleEdit]:
    def refuse(ctx: RuleContext) -> RuleEdit:
        raise RuleRefused(f"{name} needs lexical knowledge (synonyms, antonyms, intensity); use an LLM backend")

    return refuse


def _expansion_impact(ctx: RuleContext) -> RuleEdit:
    return _addition(ctx)


RULES: dict[tuple[str, str], Callable[[RuleContext], RuleEdit]] = {
    (MQM, "Addition"): _addition,
    (MQM, "Omission"): _omission,
    (MQM, "Mistranslation"): _mistranslation,
    (MQM, "Untranslated"): _untranslated,
    (PERTURBATION, "Spelling"): _spelling,
    (PERTURBATION, "Word Order"): _word_order,
    (PERTURBATION, "Omission"): lambda ctx: _omission(ctx),
    (PERTURBATION, "Expansion (Impact)"): _expansion_impact,
    (PERTURBATION, "Synonym"): _needs_model("Synonym"),
    (PERTURBATION, "Intensifier"): _needs_model("Intensifier"),
    (PERTURBATION, "Expansion (No Impact)"): _needs_model("Expansion (No Impact)"),
    (PERTURBATION, "Alteration"): _needs_model("Alteration"),
}


def rule_edit(
    *,
    reference: str,
    source: str,
    language: str,
    kind: str,
    error_type: str,
    position: str,
    seed: int,
    item_key: object = None,
    donors: DonorPool | None = None,
) -> RuleEdit:
    """One rule-based edit, the same for the same (seed, item_key)."""
    rule = RULES.get((kind, error_type))
    if rule is None:
        raise RuleRefused(f"no rule for {kind} type {error_type!r}")
    if not reference.strip():
        raise RuleRefused("empty reference")
    if kind == PERTURBATION:
        position = NONE
    ctx = RuleContext(
        reference=reference,
        source=source,
        language=language,
        error_type=error_type,
        position=position,
        kind=kind,
        rng=item_rng(seed, item_key if item_key is not None else reference, kind, error_type, position),
        donors=donors,
    )
    if kind == MQM and len(ctx.units) < 2:
        raise RuleRefused("a reference of fewer than two units has no two halves")
    return rule(ctx)


_SENTENCE_END_RE = re.compile(r"[.!?。！？]$")
