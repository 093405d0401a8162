"""The judge metrics against their authors' own functions (fixtures made by running the authors' code from
a fetched checkout: ``scoring/tests/regen_judge_fixtures.py``), and answers kept aligned with their
questions."""
from __future__ import annotations

import json

import pytest

from scoring.judges.parsing import string_list

# ---- answer alignment ---------------------------------------------------------------------------------------


def test_an_empty_answer_keeps_its_place():
    assert string_list('["Paris", "", "1999"]') == ["Paris", "", "1999"]
    assert string_list('{"answers": ["", "x"]}', n=2) == ["", "x"]


@pytest.mark.parametrize("text", ['["a", "b"]', '["a", "b", "c", "d"]', '["a", null, "c"]', '["a", ["b"], "c"]'])
def test_a_list_of_the_wrong_length_or_shape_is_unreadable_not_padded(text):
    assert string_list(text, n=3) is None


def test_cef_labels_are_read_in_place_and_never_padded():
    from scoring.metrics.cef import labels

    assert labels(json.dumps(["YES", "", "no"]), 3) == ["YES", "IDK", "NO"]
    assert labels(json.dumps(["YES", "NO"]), 3) is None


# ---- the authors' functions, run to make the fixture ----------------------------------------------------------

FIXTURE = json.loads((__import__("pathlib").Path(__file__).parent / "fixtures" / "judge_reference.json").read_text())


@pytest.mark.parametrize("case", FIXTURE["cef_scores"], ids=lambda c: c["case"])
def test_cef_dimensions_equal_the_authors_calculate_scores(case):
    from scoring.metrics.cef import dimensions

    qt = case["mt_q_on_src"]  # questions from the MT: predicted on the source, gold on the MT
    qd = case["src_q_on_mt"]  # questions from the source: predicted on the MT, gold on the source
    dims = dimensions([p for p, _ in qd], [g for _, g in qd], [p for p, _ in qt], [g for _, g in qt])
    for name in ("coverage", "conformity", "consistency"):
        assert dims[name] == pytest.approx(100.0 * case[name], abs=1e-9), name


@pytest.mark.parametrize("case", FIXTURE["cef_reliability"], ids=lambda c: c["case"])
def test_cef_adr_and_ads_equal_the_authors_robustness_script(case):
    from scoring.metrics.cef import reliability

    judges = case["judges"]
    questions, answers = [], {m: {} for m in judges}
    for author in judges:
        for group, example in enumerate(case["data"][author]):
            for k, text in enumerate(example["questions"]):
                j = len(questions)
                questions.append((author, group, text))
                for other, values in example["answers"].items():
                    answers[other][j] = values[k]
    got = reliability(questions, answers)
    for m in judges:
        want = case["result"][m]
        # the authors' script prints percent to 2 decimals
        assert round(100 * got[m]["adr"], 2) == pytest.approx(want["adr_percent"], abs=0.006), (m, "adr")
        assert round(100 * got[m]["ads"], 2) == pytest.approx(want["ads_percent"], abs=0.006), (m, "ads")
