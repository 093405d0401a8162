"""The agreement figures a release's dataset card shows (``exports.benchmark.selectors.agreement_figures``):
read one target language at a time, so a release of many directions never holds the whole campaign's
decisions, and equal to the whole report's per-language figures."""

from __future__ import annotations

import pytest

from annotation.agreement import selectors as sel
from annotation.agreement.domain import statistics as ag
from exports.benchmark import selectors
from tests.annotation.agreement.conftest import DE_R1, ZH_R1, A, R
from tests.support.asserts import every

DE_R2 = [(A, A), (R, R), (A, R), (A, A)]


def test_card_figures_are_read_one_language_at_a_time_and_equal_the_whole_report(world, monkeypatch):
    reads = []
    decision_rows = sel._decision_rows

    def recording(project, languages):  # the real read, its rows' languages noted
        rows = decision_rows(project, languages)
        reads.append({d.language for d in rows})
        return rows

    monkeypatch.setattr(sel, "_decision_rows", recording)
    figures = selectors.agreement_figures(world.project)

    assert reads and every(len(languages) <= 1 for languages in reads)  # never two languages' decisions at once
    assert set().union(*reads) == {"de", "zh"}
    de_units = [list(p) for p in DE_R1 + DE_R2]
    zh_units = [list(p) for p in ZH_R1]
    expected = {
        "de": f"16 doubly reviewed candidates, percent agreement {12 / 16:.3f}, "
        f"Krippendorff's α (nominal) {ag.krippendorff_alpha([[u[0] for u in de_units], [u[1] for u in de_units]], 'nominal'):.3f}, "
        f"Fleiss' κ {ag.fleiss_kappa(de_units):.3f}",
        "zh": f"8 doubly reviewed candidates, percent agreement {7 / 8:.3f}, "
        f"Krippendorff's α (nominal) {ag.krippendorff_alpha([[u[0] for u in zh_units], [u[1] for u in zh_units]], 'nominal'):.3f}, "
        f"Fleiss' κ {ag.fleiss_kappa(zh_units):.3f}",
    }
    assert figures == expected
    # the same as the figures of the whole report (every language in one read), which the card used before
    whole = sel.project_report(world.project, private=False, use_cache=False)["languages"]
    assert {row["language"]: row["units_with_2_or_more"] for row in whole} == {"de": 16, "zh": 8}
    for row in whole:
        assert figures[row["language"]].startswith(
            f"{row['units_with_2_or_more']} doubly reviewed candidates, "
            f"percent agreement {row['percent_agreement']:.3f}, "
        )


@pytest.mark.django_db
def test_no_card_figures_without_doubly_reviewed_candidates(project):
    assert selectors.agreement_figures(project) is None
