"""The pure rules of review: highlighting from offsets, pool rules, sampling."""

import pytest

from annotation.review import domain as rules


def kinds(pieces):
    return [(p.text, p.kind) for p in pieces]


def test_highlight_token_replacement_keeps_original_spacing():
    pieces = rules.highlight("Der  Zug fährt mittags ab.", 1, 2, "de")
    assert kinds(pieces) == [("Der  ", "plain"), ("Zug", "edit"), (" fährt mittags ab.", "plain")]


def test_highlight_deletion_marker_sits_after_previous_token():
    pieces = rules.highlight("Er kaufte Äpfel.", 2, 2, "de")
    assert kinds(pieces) == [("Er kaufte", "plain"), ("", "marker"), (" Äpfel.", "plain")]


def test_highlight_marker_at_start_and_end():
    assert kinds(rules.highlight("a b", 0, 0, "de"))[0] == ("", "marker")
    assert kinds(rules.highlight("a b", 2, 2, "de"))[-1] == ("", "marker")


def test_highlight_characters_for_chinese():
    pieces = rules.highlight("黑猫坐在垫子上。", 0, 1, "zh")
    assert kinds(pieces) == [("黑", "edit"), ("猫坐在垫子上。", "plain")]


def test_highlight_ignores_markup_inside_text():
    # The text itself contains tags: they are characters, the highlight comes from the offsets only.
    pieces = rules.highlight("<v>x</v> <script>alert(1)</script> y", 2, 3, "de")
    assert [p.text for p in pieces if p.kind == "edit"] == ["y"]
    assert "".join(p.text for p in pieces) == "<v>x</v> <script>alert(1)</script> y"


def test_highlight_clamps_offsets_past_the_end():
    assert kinds(rules.highlight("a b", 5, 9, "de")) == [("a b", "plain"), ("", "marker")]


def test_unanimous_rule():
    assert rules.pool_outcome("unanimous", ["accept"], None, 2).status == "pending"
    assert rules.pool_outcome("unanimous", ["accept", "accept"], None, 2).status == "accepted"
    assert rules.pool_outcome("unanimous", ["accept", "reject"], None, 2).status == "rejected"
    assert rules.pool_outcome("unanimous", ["accept", "reject"], "accept", 2).status == "accepted"
    assert rules.pool_outcome("unanimous", ["accept"], None, 1).status == "accepted"


def test_adjudicated_rule_waits_for_the_adjudicator():
    out = rules.pool_outcome("adjudicated", ["accept", "reject"], None, 2)
    assert out.status == "pending" and "adjudication" in out.reason
    assert rules.pool_outcome("adjudicated", ["accept", "reject"], "reject", 2).status == "rejected"
    assert rules.pool_outcome("adjudicated", ["reject", "reject"], None, 2).status == "rejected"


def test_unknown_pool_rule_is_named():
    with pytest.raises(ValueError, match="majority"):
        rules.pool_outcome("majority", [], None, 2)


def test_guidelines_cover_the_four_types_case_insensitively():
    for name in ("Addition", "omission", "MISTRANSLATION", "Untranslated"):
        assert rules.guideline_for(name) is not rules.FALLBACK_GUIDELINE
    assert rules.guideline_for("Spelling") is rules.FALLBACK_GUIDELINE
    assert any("name" in r for r in rules.guideline_for("Untranslated").reject)


def test_sample_is_seeded_and_bounded():
    ids = list(range(1000))
    assert rules.sample_ids(ids, 200, 7) == rules.sample_ids(list(reversed(ids)), 200, 7)
    assert rules.sample_ids(ids, 200, 7) != rules.sample_ids(ids, 200, 8)
    assert len(set(rules.sample_ids(ids, 200, 7))) == 200
    assert rules.sample_ids([1, 2], 200, 0) == [1, 2]


def test_median_and_rate():
    assert rules.median([3, 1, 2]) == 2
    assert rules.median([]) is None
    assert rules.decisions_per_hour(10, 3_600_000) == 10
    assert rules.decisions_per_hour(0, 0) is None
