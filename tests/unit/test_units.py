"""core.domain.units: span units, diffs, markup, conflicts. Pure Python, no database."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.domain.units import (
    Edit,
    MarkupError,
    apply_edit,
    count_edited_regions,
    diff_edit,
    halves_markup,
    mark_edit,
    outside_matches,
    parse_marked,
    position_of_edit,
    spans_conflict,
    split_units,
)


def test_units_are_characters_for_chinese_and_tokens_for_german():
    assert split_units("他是好人", "zh") == ["他", "是", "好", "人"]
    assert split_units("Er ist  gut.", "de") == ["Er", "ist", "gut."]


def test_diff_edit_finds_the_single_changed_region_in_reference_units():
    edit = diff_edit("a b c d e", "a b X Y d e", "de")
    assert edit == Edit(2, 3, ("X", "Y"))
    assert apply_edit("a b c d e", edit, "de") == "a b X Y d e"


def test_deletion_and_insertion_spans():
    deletion = diff_edit("a b c d", "a d", "de")
    assert deletion == Edit(1, 3, ()) and deletion.is_deletion
    insertion = diff_edit("a b", "a new b", "de")
    assert insertion == Edit(1, 1, ("new",)) and insertion.is_insertion
    assert diff_edit("same text", "same  text", "de") is None


def test_mark_edit_shows_an_omission_as_an_empty_region():
    assert mark_edit("a b c d", Edit(1, 3, ()), "de") == "a <v></v> d"
    assert mark_edit("他是好人", Edit(1, 2, ("不",)), "zh") == "他<v>不</v>好人"


def test_parse_marked_reads_the_published_format():
    ref = "Wie einige andere Experten zeigte er sich skeptisch, ob es möglich sei, Diabetes zu heilen."
    mt = "Wie einige andere Experten zeigte er sich skeptisch, <v></v> Diabetes zu heilen."
    parsed = parse_marked(mt, ref, "de")
    assert parsed.edit == Edit(8, 12, ())
    assert parsed.outside_matches_reference
    assert split_units(apply_edit(ref, parsed.edit, "de"), "de") == split_units(parsed.text, "de")


def test_parse_marked_flags_changes_outside_the_region():
    parsed = parse_marked('He said "yes" <v>loudly</v> today.', 'He said yes quietly today.', "de")
    assert not parsed.outside_matches_reference
    assert "before the span" in parsed.outside_diff


def test_parse_marked_widens_a_tag_inside_a_token_to_whole_tokens():
    parsed = parse_marked("the big<v>gest</v> house", "the big house", "de")
    assert parsed.edit == Edit(1, 2, ("biggest",))


@pytest.mark.parametrize(
    "marked, message",
    [("no region here", "no <v>"), ("a <v>b</v> c <v>d</v>", "2 <v>"), ("a <v>b c", "unbalanced"), ("a </v>b<v> c", "before")],
)
def test_malformed_markup_is_an_error(marked, message):
    with pytest.raises(MarkupError, match=message):
        parse_marked(marked, "a b c d", "de")


def test_halves_and_positions_follow_n_div_2():
    assert halves_markup("a b c d e", "de") == "<head>a b</head> <end>c d e</end>"
    assert halves_markup("一二三四", "zh") == "<head>一二</head><end>三四</end>"
    assert position_of_edit(Edit(0, 1, ()), "a b c d e", "de") == "head"
    assert position_of_edit(Edit(3, 4, ("x",)), "a b c d e", "de") == "end"
    assert position_of_edit(Edit(1, 3, ("x",)), "a b c d e", "de") == "both"


def test_conflict_rule_needs_one_unchanged_unit_between_edits():
    assert spans_conflict((0, 2), (2, 3))  # touching
    assert not spans_conflict((0, 2), (3, 4))  # one unit between
    assert spans_conflict((2, 2), (2, 3))  # insertion at the start of another edit
    assert not spans_conflict((1, 1), (2, 2))  # two insertions one unit apart
    assert spans_conflict((1, 5), (2, 3))  # nested


def test_count_edited_regions():
    assert count_edited_regions("a b c d e", "a X c Y e", "de") == 2
    assert count_edited_regions("a b c", "a b c", "de") == 0


units = st.lists(st.sampled_from(list("abcdef")), min_size=1, max_size=12)


@given(ref=units, cand=units)
def test_diff_then_apply_round_trips(ref, cand):
    reference, candidate = " ".join(ref), " ".join(cand)
    edit = diff_edit(reference, candidate, "de")
    if edit is None:
        assert ref == cand
        return
    assert apply_edit(reference, edit, "de") == candidate
    assert outside_matches(reference, candidate, edit, "de")
    reparsed = parse_marked(mark_edit(reference, edit, "de"), reference, "de")
    assert reparsed.edit == edit and reparsed.outside_matches_reference
