"""From a model's raw answer to a candidate: the edited sentence and its span. Pure Python (no Django).

SPEC §1, following the published post-processing: strip markdown, take the text after the last answer
prefix, keep the longest line, remove the half tags. The span is then computed by diff against the
reference in the language's unit (``core.domain.units.diff_edit``); the model's own markup is never trusted.
Length and locality are *checks* (``injection.domain.checks``), not rejections: a candidate is flagged, not
dropped. Only an answer with no sentence in it at all is a failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from core.domain.errors import Invalid
from core.domain.units import Edit, count_edited_regions, diff_edit, join_units
from injection.domain.prompts import ANSWER_KEY
from llm_client.answers import NestedTooDeep, loads_bounded

ANSWER_PREFIXES = (
    "updated sentence",
    "final output",
    "final answer",
    "final sentence",
    "modified sentence",
    "edited sentence",
    "output",
    "answer",
    "perturbed",
    "result",
)
_PREFIX_RE = re.compile(
    r"(?i)(?:^|\n|\*\*|\s)(?:" + "|".join(re.escape(p) for p in ANSWER_PREFIXES) + r")\s*\**\s*[:：]"
)
_FENCE_RE = re.compile(r"```[a-zA-Z0-9_-]*\n?|```")
_EMPHASIS_RE = re.compile(r"(\*\*|__|~~)")
_LINE_MARK_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d+[.)]\s+)")
_HALF_TAG_RE = re.compile(r"</?\s*(?:head|end|v)\s*>", re.IGNORECASE)
_QUOTES = [('"', '"'), ("“", "”"), ("'", "'"), ("「", "」"), ("«", "»"), ("`", "`")]


class OutputRejected(Invalid, ValueError):
    """The answer holds no usable sentence (empty, refused, unparseable). ``reason`` says why."""

    code = "output_rejected"


def _from_json(raw: str) -> str | None:
    text = raw.strip()
    text = _FENCE_RE.sub("", text).strip()
    if not text.startswith("{"):
        return None
    try:
        value = loads_bounded(text)
    except NestedTooDeep as exc:  # refused before the parser recurses into it (#48.2)
        raise OutputRejected(str(exc)) from None
    except json.JSONDecodeError:
        return None
    if isinstance(value, dict):
        answer = value.get(ANSWER_KEY)
        if isinstance(answer, str):
            return answer
        strings = [v for v in value.values() if isinstance(v, str)]
        if len(strings) == 1:
            return strings[0]
    raise OutputRejected(f"JSON answer without a string field {ANSWER_KEY!r}")


def extract_sentence(raw: str, reference: str = "") -> str:
    """The edited sentence in a raw model answer (JSON or free text)."""
    if raw is None or not raw.strip():
        raise OutputRejected("empty response")
    answer = _from_json(raw)
    if answer is None:
        text = _FENCE_RE.sub("", raw)
        matches = list(_PREFIX_RE.finditer(text))
        if matches:
            text = text[matches[-1].end() :]
        lines = [_LINE_MARK_RE.sub("", _EMPHASIS_RE.sub("", line)).strip() for line in text.splitlines()]
        lines = [line for line in lines if line]
        if not lines:
            raise OutputRejected("no sentence after the answer prefix")
        answer = max(lines, key=len)
    answer = _HALF_TAG_RE.sub("", answer)
    answer = re.sub(r"[ \t]+", " ", answer).strip()
    for left, right in _QUOTES:
        # Quotes wrapped around the whole answer are formatting unless the reference itself is quoted so.
        if (
            len(answer) >= 2
            and answer.startswith(left)
            and answer.endswith(right)
            and not (reference.startswith(left) and reference.endswith(right))
        ):
            answer = answer[len(left) : len(answer) - len(right)].strip()
    if not answer:
        raise OutputRejected("empty sentence after post-processing")
    return answer


@dataclass(frozen=True)
class Processed:
    text: str
    edit: Edit | None  # None when the text equals the reference (in units)
    regions: int


def process_output(raw: str, reference: str, language: str) -> Processed:
    text = extract_sentence(raw, reference)
    return Processed(
        text=text, edit=diff_edit(reference, text, language), regions=count_edited_regions(reference, text, language)
    )


def candidate_fields(processed: Processed, language: str) -> dict:
    """Span fields of a Candidate in reference units (an unchanged output gets an empty span at 0)."""
    edit = processed.edit
    if edit is None:
        return {"text": processed.text, "span_start": 0, "span_end": 0, "edit_text": ""}
    return {
        "text": processed.text,
        "span_start": edit.start,
        "span_end": edit.end,
        "edit_text": join_units(edit.replacement, language),
    }
