"""The pure rules of span annotation, on hand-worked cases: tokens and snapping, the span check, the MQM score,
the known-answer check, where attention items fall, and the injected errors' character spans."""

import pytest

from annotation.spans import domain as rules
from core.domain.errors import Invalid


def test_tokens_are_words_or_characters():
    words = [t.text for t in rules.tokens("Die  Katze saß.", "de") if not t.space]
    assert words == ["Die", "Katze", "saß."]
    assert [t.text for t in rules.tokens("猫坐了", "zh")] == ["猫", "坐", "了"]
    assert [(t.start, t.end) for t in rules.tokens("ab cd", "th") if not t.space] == [(0, 1), (1, 2), (3, 4), (4, 5)]


@pytest.mark.parametrize(
    ("text", "lang", "start", "end", "expected"),
    [
        ("Die Katze saß.", "de", 5, 7, (4, 9)),  # inside "Katze"
        ("Die Katze saß.", "de", 2, 6, (0, 9)),  # across "Die" and "Katze"
        ("Die Katze saß.", "de", 3, 4, (3, 4)),  # only the space: left as it is (no word inside)
        ("Die Katze saß.", "de", 9, 9, (4, 14)),  # an insertion point between two words: both
        ("猫坐在垫子上", "zh", 1, 3, (1, 3)),  # characters: unchanged
        ("Die Katze", "de", 0, 99, (0, 9)),  # clamped
    ],
)
def test_snap_span(text, lang, start, end, expected):
    assert rules.snap_span(text, start, end, lang) == expected


def _span(**kw):
    return {"side": "target", "start": 0, "end": 3, "severity": "minor", **kw}


def test_check_spans_accepts_and_names_each_problem():
    ok = rules.check_spans(
        [_span(), _span(side="source", start=4, end=7, severity="major")],
        source="The cat",
        translation="Die Katze",
        protocol="esa",
    )
    assert [(s.side, s.start, s.end, s.severity, s.origin) for s in ok] == [
        ("target", 0, 3, "minor", "human"),
        ("source", 4, 7, "major", "human"),
    ]
    cases = [
        ([_span(end=10)], "spans[0]", "not a span of the target"),
        ([_span(start=3, end=3)], "spans[0]", "0 ≤ start < end"),
        ([_span(severity="critical")], "spans[0].severity", "ESA"),
        ([_span(category="accuracy/omission")], "spans[0].category", "no category"),
        ([_span(side="middle")], "spans[0].side", "one of"),
        ([_span(), _span(start=2, end=5)], "spans", "overlap"),
        ([_span(start="x")], "spans[0].start", "integer"),
        ([_span(ai_index=0)], "spans[0].ai_index", "no pre-filled"),
        ([_span()] * (rules.MAX_SPANS_PER_ITEM + 1), "spans", "at most"),
    ]
    for spans, field, words in cases:
        with pytest.raises(Invalid) as exc:
            rules.check_spans(spans, source="The cat", translation="Die Katze", protocol="esa")
        assert exc.value.field == field and words in exc.value.message, (spans[:1], exc.value.message)
    with pytest.raises(Invalid, match="MQM category"):
        rules.check_spans([_span(severity="critical")], source="a", translation="Die Katze", protocol="mqm")
    mqm = rules.check_spans(
        [_span(severity="critical", category="accuracy/mistranslation")],
        source="a",
        translation="Die Katze",
        protocol="mqm",
    )
    assert mqm[0].category == "accuracy/mistranslation"


@pytest.mark.parametrize(
    ("severities", "weight", "score"),
    [
        ([], 25, 0.0),
        (["minor"], 25, -1.0),
        (["minor", "major"], 25, -6.0),
        (["major"] * 4, 25, -20.0),
        (["major"] * 6, 25, -25.0),  # −30 floored at −25
        (["critical"], 25, -25.0),
        (["critical", "minor"], 10, -11.0),
        (["minor"] * 30, 25, -25.0),
    ],
)
def test_mqm_score_weights_and_floor(severities, weight, score):
    assert rules.mqm_score(severities, weight) == score


def test_check_score():
    assert rules.check_score(0, "esa") == 0 and rules.check_score("100", "esa") == 100
    for bad in (-1, 100.5, "abc", None, float("nan"), True):
        with pytest.raises(Invalid) as exc:
            rules.check_score(bad, "esa")
        assert exc.value.field == "score"
    assert rules.check_score(None, "mqm") is None
    with pytest.raises(Invalid, match="computed|scored from their spans"):
        rules.check_score(50, "mqm")


def test_attention_passed_by_character_overlap():
    injected = [(4, 11)]
    assert rules.attention_passed([(10, 14)], injected)  # one character in common
    assert not rules.attention_passed([(0, 4), (11, 15)], injected)  # touching, not overlapping
    assert not rules.attention_passed([], injected)
    assert not rules.attention_passed([(0, 5)], [])  # no known answer: never a pass
    assert not rules.attention_passed([(4, 11)], [(4, 11), (20, 25)])  # every injected span must be found


def test_attention_slots_are_spread_never_bunched_at_the_end():
    share = 0.1
    for seed in ("1:7", "2:8", "x"):
        slots = [k for k in range(200) if rules.attention_slot(k, share, seed)]
        blocks = [k // 10 for k in slots]
        assert blocks == list(range(20)), slots  # exactly one in every block of ten
    # across annotators the places differ (seeded by task and annotator)
    a = [k for k in range(100) if rules.attention_slot(k, share, "1:7")]
    b = [k for k in range(100) if rules.attention_slot(k, share, "1:8")]
    assert a != b
    assert not any(rules.attention_slot(k, 0, "s") for k in range(50))


def test_queue_order_is_a_seeded_permutation():
    order = rules.queue_order(50, 3)
    assert sorted(order) == list(range(50)) and order == rules.queue_order(50, 3) and order != list(range(50))


def test_injected_char_span_of_a_candidate():
    ref, cand = "Die Katze saß auf der Matte.", "Die schwarze Katze saß auf der Matte."
    s, e = rules.injected_char_span(ref, cand, "de")
    assert cand[s:e] == "schwarze"
    s, e = rules.injected_char_span("Der Fluss ist breit.", "Der Fluss ist schmal.", "de")
    assert "Der Fluss ist schmal."[s:e] == "schmal."
    # a deletion: the words on each side of the gap
    s, e = rules.injected_char_span("Er kaufte drei Äpfel.", "Er kaufte Äpfel.", "de")
    assert "Er kaufte Äpfel."[s:e] == "kaufte Äpfel."
    assert rules.injected_char_span("猫坐在垫子上。", "黑猫坐在垫子上。", "zh") == (0, 1)
    assert rules.injected_char_span("same", "same", "de") is None


def test_marked_char_spans_of_a_pseudo_translation():
    marked = "Der <v>Bus</v> fährt <v>morgens</v> ab."
    text = "Der Bus fährt morgens ab."
    spans = rules.marked_char_spans(marked, "de")
    assert [text[s:e] for s, e in spans] == ["Bus", "morgens"]
    assert rules.marked_char_spans("Sie <v></v>singen.", "de") == [(0, 11)]


def test_metric_spans_keep_valid_non_overlapping_ones():
    got = rules.metric_spans([[0, 3], [2, 5], [6, 99], [6, 8, "minor"], "junk", [1]], 10)
    assert got == [{"start": 0, "end": 3, "severity": "major"}, {"start": 6, "end": 8, "severity": "minor"}]
    assert rules.metric_spans(None, 10) == []


def test_ai_fates():
    ai = [
        {"start": 0, "end": 3, "severity": "major"},
        {"start": 4, "end": 9, "severity": "minor"},
        {"start": 10, "end": 12, "severity": "major"},
    ]
    spans = rules.check_spans(
        [_span(end=3, severity="major", ai_index=0), _span(start=4, end=9, severity="major", ai_index=1)],
        source="x",
        translation="Die Katze ab",
        protocol="esa",
        ai_count=3,
    )
    assert rules.ai_fates(spans, ai) == ["kept", "edited", "deleted"]
