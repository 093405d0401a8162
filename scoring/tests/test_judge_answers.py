"""How the judge metrics read their judges' answers, against their authors' own readers (fixtures made by
running the authors' functions from fetched checkouts: ``scoring/tests/regen_judge_answer_fixtures.py``),
and the order in which AskQE's NLI filter feeds its classifier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "judge_answers_reference.json").read_text())

# ---- 1. AskQE's NLI filter: (fact, source), the model card's (textA, textB) -----------------------------------


def test_the_nli_pair_is_the_fact_then_the_source_as_the_model_card_orders_its_example():
    from scoring.metrics.askqe import nli_pairs

    # potsawee/deberta-v3-large-mnli's card: textA (entailed by, or contradicted by, textB) is the short claim
    text_a = "Kyle Walker has a personal issue."
    text_b = (
        "Kyle Walker will remain Manchester City captain following reports about his private life, "
        "says boss Pep Guardiola."
    )
    assert nli_pairs(text_b, [text_a]) == [(text_a, text_b)]


def test_the_filter_keeps_a_fact_the_source_states_under_a_classifier_that_reads_the_order(tmp_path):
    from scoring.metrics.askqe import NliFilter
    from scoring.tests.tiny_models import order_sensitive_nli

    model = order_sensitive_nli(tmp_path / "nli")
    source = "The museum will reopen next spring, and the garden stays closed."
    stated, contradicted = "museum will reopen next", "the garden stays open"
    # the classifier entails textA when textB contains it: fed (source, fact) it would drop both facts
    assert NliFilter(str(model)).keep(source, [stated, contradicted]) == [stated]


# ---- 2. AskQE's decision: the authors' gmm.py fits one score and decides on another ---------------------------


@pytest.mark.parametrize("case", FIXTURE["askqe_gmm_literal"], ids=lambda c: c["case"])
def test_the_authors_literal_decision_equals_their_gmm_script(case):
    from scoring.metrics.askqe import gmm_decision

    decision, p_reject, fit = gmm_decision(case["fitted"], decide_on=case["decided_on"])
    assert fit["midpoint"] == pytest.approx(case["threshold"], abs=1e-9)
    assert p_reject == pytest.approx(case["p_reject"], abs=1e-6)
    assert decision == case["decision"]
    # the default, the paper's, decides on the fitted score: the fixture tells the two apart
    assert gmm_decision(case["fitted"])[0] != case["decision"]


def test_the_literal_decision_is_an_option_of_the_metric_read_from_a_release_column():
    from scoring.metrics.askqe import DECISION_INPUT, AskQEScorer, finalize_run

    case = FIXTURE["askqe_gmm_literal"][1]
    options = {**AskQEScorer.options, "decision_score": "xcomet"}
    updates = finalize_run(options, {"en-de": case["fitted"]}, {"en-de": {DECISION_INPUT: case["decided_on"]}})
    columns, entries = updates["en-de"]
    assert columns["decision"] == case["decision"] and entries["gmm"]["decided_on"]
    default = finalize_run(dict(AskQEScorer.options), {"en-de": case["fitted"]})
    assert default["en-de"][0]["decision"] != case["decision"]
    scorer = AskQEScorer(judge={"model": "m", "base_url": "http://127.0.0.1:9/v1"}, decision_score="xcomet")
    assert scorer.wanted_columns() == ["xcomet"]
    assert scorer.signature("de")["options"]["decision_score"] == "xcomet"


# ---- 3. GEMBA-MQM: an answer in the authors' JSON form ------------------------------------------------------------


@pytest.mark.parametrize("case", FIXTURE["gemba_json"], ids=lambda c: c["case"])
def test_a_json_form_answer_scores_what_the_authors_parse_mqm_answer_gives(case):
    from scoring.judges.mqm import parse_answer

    parsed = parse_answer(case["answer"])
    assert parsed.score == case["score"]
    if case["answer"].startswith("{"):
        assert parsed.parsable  # read, not "no MQM headers"


# ---- 4. DCR: the AMC answer read as the authors' auto_metric_converter reads it -----------------------------------


@pytest.mark.parametrize("case", FIXTURE["dcr_reader"], ids=lambda c: c["answer"])
def test_dcr_reads_the_amc_answer_as_the_authors_converter(case):
    from scoring.metrics.dcr import amc_score, read_marks

    marks = read_marks(case["answer"], k=3)  # k: the reasons asked about; the authors' reader ignores it
    if case["score"] is None:
        assert marks is None
    else:
        assert amc_score(marks) == pytest.approx(case["score"], abs=1e-12)


def test_the_strict_reading_is_an_option_named_in_the_signature():
    from scoring.metrics.dcr import read_marks
    from scoring.registry import get_metric

    assert read_marks('{"answer": [1, 0, -1]}', 3, "strict") == [1, -1, -1]
    assert read_marks('{"reason": ["a", "b"], "answer": [1, -1]}', 2, "strict") is None  # two lists
    judge = {"model": "stub-judge", "base_url": "http://127.0.0.1:9/v1"}
    assert get_metric("dcr").build(judge=judge).signature("de")["options"]["amc_reading"] == "authors"
    strict = get_metric("dcr").build(judge=judge, amc_reading="strict").signature("de")
    assert strict["options"]["amc_reading"] == "strict"


# ---- 5. string_list: a non-text element is unreadable, as docs/judges.md says -------------------------------------


@pytest.mark.parametrize("text", ['[1, "a"]', '["a", 2.5]', '{"answers": [true, "b"]}', '["a", null]'])
def test_a_list_holding_a_non_text_element_is_unreadable(text):
    from scoring.judges.parsing import string_list

    assert string_list(text) is None
    assert string_list(text, n=2) is None
