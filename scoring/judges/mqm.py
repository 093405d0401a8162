"""GEMBA-MQM answers and scores, as the authors' implementation computes them (Kocmi & Federmann 2023;
checked against their published parser in scoring/tests/test_gemba_oracle.py). Pure Python.

Free-text answer: lines under "Critical:", "Major:", "Minor:" headers (a header alone on its line, any
case); each other line is one error of the current severity; lines saying "no-error" / "no error", empty
lines and lines before the first header are skipped; a line naming "non-translation" is a critical error
whatever its header. Score: weights 25 / 5 / 1, only the first five errors count (critical first, then
major, then minor), total capped at 25, score = -total (-25 … 0).

JSON answer in the authors' form (an answer that begins ``{"improved translation"``): its ``errors`` object
lists the errors under "critical", "major", "minor", each element one error whatever it holds; an answer
that is not valid JSON is read as the authors' fallback does (the errors object after ``", "errors": ``, or
else one error per word "class" after a severity word). No "non-translation" promotion in this form, as theirs.

Structured answer (JSON schema): lists "critical", "major", "minor" of {"category", "span"}; it is written
out as the free-text answer and scored by the same rules, so both forms agree by construction.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from scoring.judges.parsing import extract_json

SEVERITIES = ("critical", "major", "minor")
WEIGHTS = {"critical": 25, "major": 5, "minor": 1}
MAX_COUNTED = 5
CAP = 25
_HEADERS = {f"{s}:": s for s in SEVERITIES}
_SPAN_RE = re.compile(r'"(.*)"')

SCHEMA = {
    "name": "mqm_errors",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            s: {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"category": {"type": "string"}, "span": {"type": "string"}},
                    "required": ["category", "span"],
                    "additionalProperties": False,
                },
            }
            for s in SEVERITIES
        },
        "required": list(SEVERITIES),
        "additionalProperties": False,
    },
}


@dataclass
class MQMError:
    severity: str
    line: str  # the answer's line as written (original case)
    category: str
    span: str


@dataclass
class Parsed:
    errors: list[MQMError] = field(default_factory=list)
    parsable: bool = True

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for e in self.errors if e.severity == s) for s in SEVERITIES}

    @property
    def total(self) -> int:
        counted = 0
        total = 0
        for severity in SEVERITIES:
            for e in self.errors:
                if e.severity == severity and counted < MAX_COUNTED:
                    total += WEIGHTS[severity]
                    counted += 1
        return min(total, CAP)

    @property
    def score(self) -> float:
        return float(-self.total)


def _split_error(line: str) -> tuple[str, str]:
    quoted = _SPAN_RE.search(line)
    if " - " in line:
        category, rest = line.split(" - ", 1)
    else:
        category, rest = line, ""
    span = quoted.group(1) if quoted else rest.strip().strip('"')
    return category.strip(), span


def parse_free_text(answer: str) -> Parsed:
    parsed = Parsed()
    level = None
    seen_header = False
    seen_no_error = False
    for original in str(answer).split("\n"):
        line = original.strip()
        low = line.lower()
        if not low:
            continue
        if "no-error" in low or "no error" in low:
            seen_no_error = True
            continue
        if low in _HEADERS:
            level = _HEADERS[low]
            seen_header = True
            continue
        if level is None:
            continue
        severity = "critical" if "non-translation" in low else level
        category, span = _split_error(line)
        parsed.errors.append(MQMError(severity, line, category, span))
    parsed.parsable = seen_header or seen_no_error
    return parsed


def structured_to_text(value) -> str | None:
    """The free-text form of a structured answer (None when it does not follow the schema)."""
    if not isinstance(value, dict) or not any(s in value for s in SEVERITIES):
        return None
    lines = []
    for severity in SEVERITIES:
        items = value.get(severity) or []
        if not isinstance(items, list):
            return None
        lines.append(f"{severity.capitalize()}:")
        if not items:
            lines.append("no-error")
        for item in items:
            if isinstance(item, dict):
                category = " ".join(str(item.get("category", "other")).split())
                span = " ".join(str(item.get("span", "")).split())
            else:
                category, span = "other", " ".join(str(item).split())
            lines.append(f'{category} - "{span}"')
    return "\n".join(lines)


JSON_FORM = '{"improved translation"'  # how an answer in the authors' JSON form begins (no space allowed)
_WORD = re.compile(r"\b\w+\b")


def _errors_of_broken_json(answer: str) -> dict:
    """The errors object of a JSON-form answer that ``json.loads`` refuses, as the authors' fallback reads it:
    the text after the one ``", "errors": `` (less its last character) as JSON; failing that, one error per
    word "class" after a severity word. Anything else: no errors."""
    if '"errors": ' not in answer or "improved translation" not in answer:
        return {}
    halves = answer.split('", "errors": ')
    if len(halves) != 2:
        return {}
    tail = halves[1][:-1]
    try:
        return json.loads(tail)
    except json.JSONDecodeError:
        pass
    errors: dict[str, list] = {}
    severity = None
    for word in _WORD.findall(tail.lower()):
        if word in WEIGHTS:
            severity = word
        elif severity is not None and word == "class":
            errors.setdefault(severity, []).append({"class": "other"})
    return errors


def parse_json_form(answer: str) -> Parsed:
    """An answer in the authors' JSON form (``{"improved translation": …, "errors": {severity: [error, …]}}``).
    Where their parser fails (valid JSON without an ``errors`` object, or a severity not holding a list) it
    is unreadable here (score 0, noted)."""
    try:
        value = json.loads(answer)
    except json.JSONDecodeError:
        value = {"errors": _errors_of_broken_json(answer)}
    errors = value.get("errors") if isinstance(value, dict) else None
    if not isinstance(errors, dict):
        return Parsed(parsable=False)
    parsed = Parsed()
    for severity in SEVERITIES:
        items = errors.get(severity, [])
        if not isinstance(items, list):
            return Parsed(parsable=False)
        for item in items:
            line = json.dumps(item, ensure_ascii=False)
            if isinstance(item, dict):
                category = " ".join(str(item.get("class", item.get("category", "other"))).split())
                span = " ".join(str(item.get("span", "")).split())
            else:
                category, span = "other", " ".join(str(item).split())
            parsed.errors.append(MQMError(severity, line, category, span))
    return parsed


def parse_answer(answer: str, structured: bool = False) -> Parsed:
    if not structured and str(answer).startswith(JSON_FORM):
        return parse_json_form(str(answer))
    if structured:
        text = structured_to_text(extract_json(answer))
        if text is None:
            return Parsed(parsable=False)
        return parse_free_text(text)
    return parse_free_text(answer)


def locate(span: str, mt: str) -> tuple[int, int, bool]:
    """Character offsets of an error span in the MT (exact, then case-insensitive); (-1, -1, False) when absent."""
    span = span.strip()
    if not span:
        return -1, -1, False
    start = mt.find(span)
    if start < 0:
        start = mt.lower().find(span.lower())
    if start < 0:
        return -1, -1, False
    return start, start + len(span), True
