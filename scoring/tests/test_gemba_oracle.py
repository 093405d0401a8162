"""GEMBA-MQM scores equal the authors' parser (gemba 0.1.3, gemba_mqm_utils.parse_mqm_answer, a test-only
dependency) on a few thousand generated answers, free text and structured."""

from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from scoring.judges.mqm import SEVERITIES, parse_answer, parse_free_text, structured_to_text

CATEGORIES = [
    "accuracy/mistranslation",
    "accuracy/omission",
    "accuracy/addition",
    "accuracy/untranslated text",
    "fluency/grammar",
    "fluency/spelling",
    "fluency/punctuation",
    "style/awkward",
    "terminology/inappropriate for context",
    "locale convention/date",
    "non-translation",
    "other",
]
SPANS = ["der Hund", "gestern", "sehr groß", "no", "Haus", "über die Brücke", "critical", "a major issue", "X"]


def _oracle():
    pytest.importorskip("gemba", reason="gemba==0.1.3 (test-only oracle) is not installed in this environment")
    from gemba.gemba_mqm_utils import parse_mqm_answer

    def score(answer: str) -> float:
        with contextlib.redirect_stdout(io.StringIO()):  # the authors' parser prints while it parses
            return -float(-parse_mqm_answer(answer, normalize=False))

    return score


def _error_line(rng: random.Random) -> str:
    category = rng.choice(CATEGORIES)
    span = rng.choice(SPANS)
    form = rng.randrange(4)
    if form == 0:
        return f'{category} - "{span}"'
    if form == 1:
        return f"{category.upper()} - '{span}'"
    if form == 2:
        return f"  {category} -  {span}  "
    return f'{category}: "{span}"'


def _free_text(rng: random.Random) -> str:
    lines = []
    if rng.random() < 0.2:
        lines.append(rng.choice(["Here are the errors:", "Sure.", "Translation review", ""]))
    if rng.random() < 0.1:
        lines.append(_error_line(rng))  # before any header: not counted
    for severity in rng.sample(list(SEVERITIES), k=rng.randint(0, 3)) if rng.random() < 0.2 else SEVERITIES:
        header = rng.choice(
            [f"{severity.capitalize()}:", f"{severity.upper()}:", f"{severity}:", f"  {severity.capitalize()}:  "]
        )
        if rng.random() < 0.05:
            header = f"{severity.capitalize()}: {_error_line(rng)}"  # header and error on one line
        lines.append(header)
        n = rng.choice([0, 0, 1, 1, 2, 3, 6])
        if n == 0:
            lines.append(rng.choice(["no-error", "No-error", "no error", "None"]))
        for _ in range(n):
            lines.append(_error_line(rng))
            if rng.random() < 0.1:
                lines.append("")
    sep = "\r\n" if rng.random() < 0.1 else "\n"
    return sep.join(lines)


def _structured(rng: random.Random) -> dict:
    return {
        s: [{"category": rng.choice(CATEGORIES), "span": rng.choice(SPANS)} for _ in range(rng.choice([0, 0, 1, 2, 4]))]
        for s in SEVERITIES
    }


def test_free_text_scores_equal_the_authors_parser_on_3000_answers():
    oracle = _oracle()
    rng = random.Random(2023)
    distinct = set()
    for _ in range(3000):
        answer = _free_text(rng)
        ours = parse_free_text(answer).score
        assert ours == oracle(answer), answer
        distinct.add(ours)
    assert len(distinct) >= 10  # the generator covers the range, not just 0 and -25


def test_structured_scores_equal_the_authors_parser_on_2000_answers():
    oracle = _oracle()
    rng = random.Random(42)
    for _ in range(2000):
        value = _structured(rng)
        ours = parse_answer(json.dumps(value), structured=True)
        assert ours.parsable
        assert ours.score == oracle(structured_to_text(value)), value


def test_weights_cap_and_order_by_hand():
    # 1 major + 6 minor: counted in order critical, major, minor, first five only: 5 + 4 = 9.
    answer = 'Critical:\nno-error\nMajor:\naccuracy/omission - "x"\nMinor:\n' + "\n".join(['fluency/grammar - "y"'] * 6)
    assert parse_free_text(answer).score == -9
    # a non-translation error under Minor counts as critical; critical + anything is capped at 25.
    assert parse_free_text('Minor:\nnon-translation - "all"\nstyle/awkward - "z"').score == -25
    assert parse_free_text("Major:\n" + "\n".join(['accuracy/mistranslation - "w"'] * 7)).score == -25
    assert parse_free_text("Critical:\nno-error\nMajor:\nno-error\nMinor:\nno-error").score == 0
    assert not parse_free_text("The translation looks fine to me.").parsable
