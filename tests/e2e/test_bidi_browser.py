"""Bidirectional control characters (U+202E RIGHT-TO-LEFT OVERRIDE and friends) in corpus text must not
reorder the rest of the line: the edit highlight stays between the text before it and the text after it."""

from __future__ import annotations

import pytest

from tests.annotation.review.factories import make_candidate
from tests.e2e.conftest import login, shot
from tests.e2e.test_review_browser import next_review

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RLO = "\u202e"

GEOMETRY = """() => {
  const box = document.querySelector('#candidate-text');
  const mark = box.querySelector('mark.edit');
  const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
  let after = null;
  while (walker.nextNode()) { if (walker.currentNode.data.includes('und ging')) after = walker.currentNode; }
  const range = document.createRange();
  const start = after.data.indexOf('und ging');
  range.setStart(after, start);
  range.setEnd(after, start + 'und ging'.length);
  const m = mark.getBoundingClientRect(), a = range.getBoundingClientRect();
  return {markLeft: m.left, markRight: m.right, afterLeft: a.left, sameLine: Math.abs(m.top - a.top) < 4,
          markBidi: getComputedStyle(mark).unicodeBidi};
}"""


def test_override_character_does_not_reverse_the_highlight_or_the_rest(project, languages, annotator_de, new_page):
    make_candidate(
        project,
        languages["en-de"],
        "He said abc def and left.",
        f"Er sagte {RLO}abc def und ging.",
        f"Er sagte {RLO}abc def schnell und ging.",
        error_type="Addition",
    )
    page = new_page()
    login(page, "anna_de", "anna-pass-123")
    next_review(page)
    shot(page, "19-bidi-override")
    g = page.evaluate(GEOMETRY)
    assert page.inner_text("#candidate-text mark.edit") == "schnell"
    # left to right as written: the highlight, then "und ging" after it on the same line
    assert g["sameLine"] and g["afterLeft"] >= g["markRight"] - 1, g
    assert g["markBidi"] == "isolate"


ORDER = """() => {
  const cell = document.querySelector('td.candidate-text[lang=ar]');
  const pieces = cell.querySelectorAll('bdi');
  const box = (el) => el.getBoundingClientRect();
  const before = box(pieces[0]), mark = box(cell.querySelector('mark.edit')), after = box(pieces[pieces.length - 1]);
  return {dir: getComputedStyle(cell).direction, beforeLeft: before.left, markLeft: mark.left, markRight: mark.right,
          afterRight: after.right, sameLine: Math.abs(before.top - after.top) < 4};
}"""


def test_an_arabic_candidate_reads_right_to_left_in_the_admin_list(project, languages, admin_user, new_page):
    """#37.4/#37.9: the candidate list's cell takes its direction from the target language, so the text
    before the edit stands to the right of the highlight and the text after it to the left."""
    make_candidate(
        project, languages["en-ar"], "The dog sleeps in the house.", "الكلب نائم في البيت.", "الكلب جالس في البيت."
    )
    page = new_page()
    login(page, "admin", "admin-pass-123", next_url="/injection/candidates/")
    g = page.evaluate(ORDER)
    assert page.inner_text("td.candidate-text[lang=ar] mark.edit") == "جالس"
    assert g["dir"] == "rtl" and g["sameLine"], g
    assert g["beforeLeft"] >= g["markRight"] - 1 and g["afterRight"] <= g["markLeft"] + 1, g
