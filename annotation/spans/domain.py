"""The rules of error-span annotation (ESA and MQM), pure Python: the tokens a span snaps to, the check of a
submitted set of spans, the MQM score, the known-answer check of an attention item, where attention items
fall in an annotator's queue, and the injected errors' character spans of candidates and pseudo translations.

Offsets are characters (code points) of the text, ``[start, end)``; the screen never computes them itself:
the page renders the text as tokens carrying their offsets (``tokens``), so a selection is whole words
(single characters in the scripts written without spaces) by construction.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.domain.errors import Invalid
from core.domain.languages import CHAR, unit_of
from core.domain.units import common_ends

ESA = "esa"
MQM = "mqm"
PROTOCOLS = (ESA, MQM)

SOURCE = "source"
TARGET = "target"
SIDES = (SOURCE, TARGET)

MINOR, MAJOR, CRITICAL = "minor", "major", "critical"
# ESA marks minor and major errors only (Kocmi et al. 2024); MQM adds critical
SEVERITIES = {ESA: (MINOR, MAJOR), MQM: (MINOR, MAJOR, CRITICAL)}

HUMAN, METRIC = "human", "metric"
KEPT, EDITED, DELETED = "kept", "edited", "deleted"
AI_FATES = (KEPT, EDITED, DELETED)

# The MQM core typology as WMT's MQM annotations use it (Freitag et al. 2021): "category/subcategory".
MQM_CATEGORIES = (
    "accuracy/addition",
    "accuracy/omission",
    "accuracy/mistranslation",
    "accuracy/untranslated",
    "fluency/grammar",
    "fluency/spelling",
    "fluency/punctuation",
    "fluency/register",
    "fluency/inconsistency",
    "fluency/character-encoding",
    "terminology/inappropriate",
    "terminology/inconsistent",
    "style/awkward",
    "locale-convention",
    "non-translation",
    "source-error",
    "other",
)

MQM_FLOOR = -25.0  # a segment's MQM score never falls below this (WMT's cap)
MQM_CRITICAL_WEIGHTS = (10, 25)
MAX_SPANS_PER_ITEM = 100  # far above any real segment (WMT MQM: a handful), low enough to refuse a flood
ESA_SCORE_RANGE = (0, 100)
MAX_ACTIVE_MS = 86_400_000


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    text: str
    space: bool  # whitespace between words: never the edge of a span


_WORDS = re.compile(r"\s+|\S+")


def tokens(text: str, language_code: str) -> list[Token]:
    """The text cut into what a span may start and end on: whitespace-separated words, or single characters
    for languages written without spaces (zh, ja, th, …), with the whitespace between them."""
    if unit_of(language_code) == CHAR:
        return [Token(i, i + 1, ch, ch.isspace()) for i, ch in enumerate(text)]
    return [Token(m.start(), m.end(), m.group(), m.group().isspace()) for m in _WORDS.finditer(text)]


def snap_span(text: str, start: int, end: int, language_code: str) -> tuple[int, int]:
    """``[start, end)`` widened to whole tokens (and clamped to the text). An empty span (an insertion point,
    e.g. a deletion's place) takes the word on each side of it."""
    start, end = max(0, min(start, len(text))), max(0, min(end, len(text)))
    words = [t for t in tokens(text, language_code) if not t.space]
    if not words:
        return 0, 0
    if start == end:
        before = [t for t in words if t.end <= start]
        after = [t for t in words if t.start >= end]
        inside = [t for t in words if t.start < start < t.end]
        if inside:
            return inside[0].start, inside[0].end
        lo = before[-1] if before else after[0]
        hi = after[0] if after else before[-1]
        return lo.start, hi.end
    hit = [t for t in words if t.start < end and start < t.end]
    if not hit:
        return start, end
    return hit[0].start, hit[-1].end


@dataclass(frozen=True)
class Span:
    side: str
    start: int
    end: int
    severity: str
    category: str = ""
    origin: str = HUMAN
    ai_index: int | None = None


def _int(value, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        raise Invalid(f"{field} must be an integer, not {value!r:.40}", field)
    return value


def check_spans(spans, *, source: str, translation: str, protocol: str, ai_count: int = 0) -> list[Span]:
    """The submitted spans, checked: each on one side with ``0 ≤ start < end ≤`` that side's length, a severity
    of the protocol, an MQM category from ``MQM_CATEGORIES`` (none for ESA), no two overlapping on one side,
    at most ``MAX_SPANS_PER_ITEM``. Raises ``Invalid`` naming the span (``spans[i].field``)."""
    if not isinstance(spans, list):
        raise Invalid("spans must be a list", "spans")
    if len(spans) > MAX_SPANS_PER_ITEM:
        raise Invalid(f"{len(spans)} spans on one item; at most {MAX_SPANS_PER_ITEM} are accepted", "spans")
    lengths = {SOURCE: len(source), TARGET: len(translation)}
    out: list[Span] = []
    for i, raw in enumerate(spans):
        where = f"spans[{i}]"
        if not isinstance(raw, dict):
            raise Invalid(f"{where} must be an object", where)
        side = raw.get("side", TARGET)
        if side not in SIDES:
            raise Invalid(f"{where}.side must be one of {', '.join(SIDES)}", f"{where}.side")
        start, end = _int(raw.get("start"), f"{where}.start"), _int(raw.get("end"), f"{where}.end")
        if not 0 <= start < end <= lengths[side]:
            raise Invalid(
                f"{where}: [{start}, {end}) is not a span of the {side} text (0 ≤ start < end ≤ {lengths[side]})",
                where,
            )
        severity = raw.get("severity")
        if severity not in SEVERITIES[protocol]:
            raise Invalid(
                f"{where}.severity must be one of {', '.join(SEVERITIES[protocol])} ({protocol.upper()})",
                f"{where}.severity",
            )
        category = raw.get("category") or ""
        if protocol == MQM and category not in MQM_CATEGORIES:
            raise Invalid(f"{where}.category must be an MQM category, not {category!r:.60}", f"{where}.category")
        if protocol == ESA and category:
            raise Invalid(f"{where}.category: ESA spans carry no category", f"{where}.category")
        ai_index = raw.get("ai_index")
        if ai_index is not None:
            ai_index = _int(ai_index, f"{where}.ai_index")
            if not 0 <= ai_index < ai_count:
                raise Invalid(f"{where}.ai_index {ai_index} names no pre-filled span", f"{where}.ai_index")
        out.append(Span(side, start, end, severity, category, METRIC if ai_index is not None else HUMAN, ai_index))
    for side in SIDES:
        mine = sorted((s for s in out if s.side == side), key=lambda s: (s.start, s.end))
        for a, b in zip(mine, mine[1:]):
            if b.start < a.end:
                raise Invalid(
                    f"two spans overlap on the {side}: [{a.start}, {a.end}) and [{b.start}, {b.end})", "spans"
                )
    used = [s.ai_index for s in out if s.ai_index is not None]
    if len(used) != len(set(used)):
        raise Invalid("a pre-filled span is kept twice", "spans")
    return out


def ai_fates(spans: Sequence[Span], ai_spans: Sequence[dict]) -> list[str]:
    """What became of each pre-filled span: kept (same place and severity), edited (moved or re-graded) or
    deleted (no submitted span carries its index)."""
    by_index = {s.ai_index: s for s in spans if s.ai_index is not None}
    fates = []
    for i, ai in enumerate(ai_spans):
        s = by_index.get(i)
        if s is None:
            fates.append(DELETED)
        elif (s.side, s.start, s.end, s.severity) == (TARGET, ai["start"], ai["end"], ai.get("severity", MAJOR)):
            fates.append(KEPT)
        else:
            fates.append(EDITED)
    return fates


def check_score(score, protocol: str) -> float | None:
    """ESA: the annotator's 0–100 (required). MQM: none is sent (it is computed from the spans)."""
    if protocol == MQM:
        if score not in (None, ""):
            raise Invalid("MQM items are scored from their spans; send no score", "score")
        return None
    if score is None or score == "" or isinstance(score, bool):
        raise Invalid("score is required: 0 to 100", "score")
    try:
        value = float(score)
    except (TypeError, ValueError):
        raise Invalid(f"score must be a number from 0 to 100, not {score!r:.40}", "score") from None
    lo, hi = ESA_SCORE_RANGE
    if not lo <= value <= hi:  # also refuses NaN
        raise Invalid(f"score {value:g} is out of range: 0 to 100", "score")
    return value


def mqm_score(severities: Iterable[str], critical_weight: int = 25) -> float:
    """The MQM score of a segment: −(1 per minor + 5 per major + ``critical_weight`` per critical), floored
    at −25."""
    weights = {MINOR: 1, MAJOR: 5, CRITICAL: critical_weight}
    return max(MQM_FLOOR, -float(sum(weights[s] for s in severities)))


def char_overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def attention_passed(marked: Iterable[tuple[int, int]], injected: Sequence[tuple[int, int]]) -> bool:
    """A known-answer item is passed when every injected span is overlapped (≥ 1 character) by a marked
    target span."""
    marked = list(marked)
    return bool(injected) and all(any(char_overlap(m, tuple(inj)) > 0 for m in marked) for inj in injected)


def attention_slot(k: int, share: float, seed: str) -> bool:
    """Whether an annotator's ``k``-th item (from 0) is an attention item: the sequence is cut into blocks of
    ``round(1 / share)`` items, and one place in each block, drawn by ``seed`` and the block, is the attention
    item's. So they are spread through the queue, one per block, never bunched at its end."""
    if share <= 0:
        return False
    block = max(2, round(1 / share))
    offset = random.Random(f"{seed}:{k // block}").randrange(block)
    return k % block == offset


def queue_order(n: int, seed: int) -> list[int]:
    """A seeded random permutation of ``range(n)``: the items' places in the queue."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return order


def injected_char_span(reference: str, candidate: str, language_code: str) -> tuple[int, int] | None:
    """The injected edit's characters in ``candidate``: what differs from ``reference`` after their common
    prefix and suffix, snapped to whole tokens (a deletion: the words around the gap). None when identical."""
    ends = common_ends(reference, candidate)
    if ends is None:
        return None
    prefix, suffix = ends
    return snap_span(candidate, prefix, len(candidate) - suffix, language_code)


_MARK = re.compile(r"<v>(.*?)</v>", re.S)


def marked_char_spans(marked: str, language_code: str) -> list[tuple[int, int]]:
    """The ``<v>…</v>`` regions of a pseudo translation's marked text as character spans of its plain
    text (an empty region, a deletion: the words around it)."""
    spans, plain_len, last = [], 0, 0
    raw = []
    for m in _MARK.finditer(marked):
        plain_len += m.start() - last
        raw.append((plain_len, plain_len + len(m.group(1))))
        plain_len += len(m.group(1))
        last = m.end()
    text = _MARK.sub(lambda m: m.group(1), marked)
    for start, end in raw:
        spans.append(snap_span(text, start, end, language_code) if start == end else (start, end))
    return spans


def metric_spans(spans, text_length: int) -> list[dict]:
    """A metric's stored spans (``MetricScore.spans``: [[start, end], …] or [[start, end, severity], …]) as
    pre-filled target spans, the ones inside the text and not overlapping an earlier one; severity major
    unless the metric says minor."""
    out: list[dict] = []
    for raw in (spans or [])[:MAX_SPANS_PER_ITEM]:
        if not isinstance(raw, (list, tuple)) or len(raw) < 2:
            continue
        try:
            start, end = int(raw[0]), int(raw[1])
        except (TypeError, ValueError):
            continue
        if not 0 <= start < end <= text_length or any(char_overlap((start, end), (o["start"], o["end"])) for o in out):
            continue
        severity = raw[2] if len(raw) > 2 and raw[2] in (MINOR, MAJOR) else MAJOR
        out.append({"start": start, "end": end, "severity": severity})
    return sorted(out, key=lambda o: o["start"])


def pass_rate(results: Iterable[bool]) -> float | None:
    results = list(results)
    return sum(results) / len(results) if results else None
