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
    parsed = parse_marked('He said "yes" <v>loudly</v> today.', "He said yes quietly today.", "de")
    assert not parsed.outside_matches_reference
    assert "before the span" in parsed.outside_diff


def test_parse_marked_widens_a_tag_inside_a_token_to_whole_tokens():
    parsed = parse_marked("the big<v>gest</v> house", "the big house", "de")
    assert parsed.edit == Edit(1, 2, ("biggest",))


@pytest.mark.parametrize(
    ("marked", "message"),
    [
        ("no region here", "no <v>"),
        ("a <v>b</v> c <v>d</v>", "2 <v>"),
        ("a <v>b c", "unbalanced"),
        ("a </v>b<v> c", "before"),
    ],
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


# ---- the diff's budget (#36.5) -------------------------------------------------------------------------------

_WORDS = st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=30)


@given(prefix=_WORDS, left=_WORDS, right=_WORDS, suffix=_WORDS)
def test_diff_opcodes_is_difflib_itself_within_the_budget(prefix, left, right, suffix):
    import difflib

    from core.domain.units import diff_opcodes

    ref, cand = prefix + left + suffix, prefix + right + suffix
    assert diff_opcodes(ref, cand) == difflib.SequenceMatcher(a=ref, b=cand, autojunk=False).get_opcodes()


@given(prefix=_WORDS, left=_WORDS, right=_WORDS, suffix=_WORDS)
def test_past_the_budget_the_opcodes_still_rebuild_the_candidate_and_the_edit_is_the_same(prefix, left, right, suffix):
    from core.domain.units import diff_opcodes, diff_units

    ref, cand = prefix + left + suffix, prefix + right + suffix
    opcodes = diff_opcodes(ref, cand, exact_within=-1)  # always the trimmed path
    rebuilt = []
    for tag, i1, i2, j1, j2 in opcodes:
        rebuilt += ref[i1:i2] if tag == "equal" else cand[j1:j2]
        if tag == "equal":
            assert ref[i1:i2] == cand[j1:j2]
    assert rebuilt == cand
    changed = [op for op in opcodes if op[0] != "equal"]
    edit = diff_units(ref, cand)
    if edit is not None and changed:  # the changed units lie inside the prefix/suffix edit (SPEC §1)
        assert changed[0][1] >= edit.start and changed[-1][2] <= edit.end


def test_a_20k_token_reference_with_one_edit_is_diffed_in_linear_time():
    import time

    reference = " ".join(f"w{i}" for i in range(20_000))
    candidate = reference.replace("w10000 ", "neu w10000 ", 1)
    started = time.perf_counter()
    assert count_edited_regions(reference, candidate, "de") == 1
    assert time.perf_counter() - started < 5.0  # 34 s with difflib over the whole texts; slack for a loaded machine


def test_two_edits_far_apart_in_20k_tokens_fail_with_the_reason_not_a_spin():
    import time

    from core.domain.units import DiffTooLarge

    reference = " ".join(f"w{i}" for i in range(20_000))
    candidate = "x " + reference + " y"
    started = time.perf_counter()
    with pytest.raises(DiffTooLarge, match="differ over 20000 and 20002 units, more than one diff may compare"):
        count_edited_regions(reference, candidate, "de")
    assert time.perf_counter() - started < 1.0
