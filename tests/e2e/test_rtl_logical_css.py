"""#46.5: right-to-left text takes the layout of its direction, through logical CSS properties. In "My
decisions" a wrapped Arabic candidate aligned every line to the left (``text-align: left`` on table cells);
on the rating screen the accent bar stayed on the left of right-aligned Arabic (``border-left``). Checked
with the browser's computed styles and the geometry of the text's lines."""

from __future__ import annotations

import pytest

from annotation.models import ReviewDecision, ReviewRound
from core.services import user_create
from tests.annotation.review.factories import make_candidate
from tests.e2e.conftest import login, shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_AR = " ".join(["ذهب الطالب إلى المكتبة الكبيرة في وسط المدينة ليقرأ كتابا جديدا عن تاريخ العلوم"] * 2)

LINES = """(selector) => {
  const cell = document.querySelector(selector);
  const style = getComputedStyle(cell);
  const range = document.createRange();
  range.selectNodeContents(cell);
  const rects = [...range.getClientRects()].filter((r) => r.width > 1);
  const inner = cell.getBoundingClientRect().right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
  const tops = [...new Set(rects.map((r) => Math.round(r.top)))];
  return {direction: style.direction, textAlign: style.textAlign, lines: tops.length,
          gaps: rects.map((r) => inner - r.right)};
}"""


def test_arabic_reads_right_to_left_in_my_decisions_and_on_the_rating_screen(project, languages, new_page):
    from annotation.models import RatingItem

    amal = user_create(username="amal_ar", password="amal-pass-123", languages=["ar"])
    reference = "ذهب الطالب إلى المكتبة."
    candidate = make_candidate(project, languages["en-ar"], "The student went to the library.", reference, LONG_AR)
    ReviewDecision.objects.create(
        candidate=candidate,
        reviewer=amal,
        round=ReviewRound.objects.create(project=project, number=1),
        decision="accept",
    )
    RatingItem.objects.create(
        project=project,
        direction=languages["en-ar"],
        kind="system_output",
        source="The student went to the library.",
        reference=reference,
        text=LONG_AR,
        system="sysA",
    )
    page = new_page({"width": 900, "height": 900})
    login(page, "amal_ar", "amal-pass-123", next_url="/review/mine/")
    cell = "td[lang=ar]"
    page.wait_for_selector(cell)
    shot(page, "46-my-decisions-rtl")
    g = page.evaluate(LINES, cell)
    assert g["direction"] == "rtl" and g["textAlign"] in ("start", "right"), g
    assert g["lines"] >= 2, g  # the candidate wraps, so every line's alignment shows
    assert max(g["gaps"]) < 2, g  # each line ends at the cell's right edge

    page.goto(f"/review/{project.name}/rate/next/?lang=ar")
    page.wait_for_selector("#rated-text")
    shot(page, "46-rating-rtl")
    bar = page.evaluate(
        """() => { const s = getComputedStyle(document.querySelector('#rated-text'));
                   return {dir: s.direction, right: s.borderRightWidth, left: s.borderLeftWidth,
                           padRight: s.paddingRight, padLeft: s.paddingLeft}; }"""
    )
    assert bar["dir"] == "rtl" and bar["right"] == "4px" and bar["left"] == "0px", bar
    assert float(bar["padRight"].removesuffix("px")) > float(bar["padLeft"].removesuffix("px")), bar
