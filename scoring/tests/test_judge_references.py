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


@pytest.mark.parametrize("case", FIXTURE["askqe_similarity"], ids=lambda c: f"{c['prediction']!r}~{c['gold']!r}")
def test_askqe_similarities_equal_the_authors_compare_answers(case):
    from scoring.judges.similarity import SIMILARITIES

    pred, gold = case["prediction"], case["gold"]
    assert SIMILARITIES["f1"](pred, gold) == pytest.approx(case["f1"], abs=1e-12)
    assert SIMILARITIES["em"](pred, gold) == case["em"]
    assert SIMILARITIES["chrf"](pred, gold) == pytest.approx(case["chrf"] / 100, abs=1e-12)
    assert SIMILARITIES["bleu"](pred, gold) == pytest.approx(case["bleu"] / 100, abs=1e-12)


def test_squad_normalisation_is_the_option_that_lower_cases():
    from scoring.judges.similarity import NORMALIZATIONS, f1

    assert f1("paris", "Paris") == 0.0 and f1("paris", "Paris", NORMALIZATIONS["squad"]) == 1.0


@pytest.mark.parametrize("case", FIXTURE["askqe_gmm"], ids=lambda c: c["case"])
def test_askqe_decision_equals_the_authors_gmm_script(case):
    from scoring.metrics.askqe import gmm_decision

    decision, p_reject, fit = gmm_decision(case["scores"])
    assert fit["midpoint"] == pytest.approx(case["threshold"], abs=1e-9)
    assert sorted(fit["means"]) == pytest.approx(case["means"], abs=1e-9)
    assert decision == case["decision"]
    assert p_reject == pytest.approx(case["p_reject"], abs=1e-6)


def test_the_posterior_rule_is_an_option_and_decides_differently_on_ties():
    from scoring.metrics.askqe import gmm_decision

    ties = next(c for c in FIXTURE["askqe_gmm"] if c["case"] == "ties")
    midpoint, _, _ = gmm_decision(ties["scores"])
    posterior, _, fit = gmm_decision(ties["scores"], rule="posterior")
    assert midpoint[-1] == "reject" and posterior[-1] == "accept"  # 0.25: below the midpoint, posterior ~0
    assert fit["rule"] == "posterior" and fit["threshold"] == 0.5


@pytest.mark.parametrize("case", FIXTURE["askqe_gmm_pooled"], ids=lambda c: c["case"])
def test_askqe_decision_pools_the_directions_as_the_authors_gmm_script_fits_their_whole_file(case):
    from scoring.metrics.askqe import AskQEScorer, finalize_run

    # the runner's step over every direction of the run, with the metric's default options
    updates = finalize_run(dict(AskQEScorer.options), case["directions"])
    assert set(updates) == set(case["directions"])
    for direction, (columns, entries) in updates.items():
        fit = entries["gmm"]
        assert fit["scope"] == "pooled" and fit["directions"] == sorted(case["directions"])
        assert fit["midpoint"] == pytest.approx(case["threshold"], abs=1e-9)
        assert sorted(fit["means"]) == pytest.approx(case["means"], abs=1e-9)
        assert columns["decision"] == case["decision"][direction], direction
        assert columns["p_reject"] == pytest.approx(case["p_reject"][direction], abs=1e-6)
        assert fit["n"] == len(case["directions"][direction])  # missing scores are in the fit as 0
        assert fit["n_pooled"] == sum(len(v) for v in case["directions"].values())
        assert fit["n_reject"] == case["decision"][direction].count("reject")


def test_the_per_direction_fit_is_an_option_and_decides_otherwise_than_the_authors():
    from scoring.metrics.askqe import finalize_run, gmm_decision

    case = next(c for c in FIXTURE["askqe_gmm_pooled"] if c["case"] == "two directions of different quality")
    per_direction = {d: gmm_decision(scores)[0] for d, scores in case["directions"].items()}
    assert per_direction != case["decision"]  # the fixture tells the two scopes apart
    assert finalize_run({"gmm_scope": "direction"}, case["directions"]) == {}  # decided by ``finalize`` instead
    ties = next(c for c in FIXTURE["askqe_gmm_pooled"] if c["case"].startswith("ties"))
    assert gmm_decision(ties["directions"]["en-zh"])[2]["fitted"] is False  # alone: a single value
    assert set(ties["decision"]["en-zh"]) == {"accept"}  # pooled: decided


@pytest.mark.parametrize("case", FIXTURE["dcr_amc"], ids=lambda c: str(c["marks"]))
def test_dcr_amc_equals_the_authors_auto_metric_converter(case):
    from scoring.metrics.dcr import amc_score

    if case["score"] is None:  # the authors' code fails (its error score) on no marks; ours refuses
        with pytest.raises(ValueError):
            amc_score(case["marks"])
    else:
        assert amc_score(case["marks"]) == pytest.approx(case["score"], abs=1e-12)


# ---- AskQE's NLI filter on a tiny classifier in the checkpoint's layout ---------------------------------------


def _tiny_nli(d, lean: str):
    """A 2-label DeBERTa-v2 sequence classifier saved with no id2label in its config (as
    potsawee/deberta-v3-large-mnli's is); its head always prefers one logit: 0 (entailment) or 1 (contradiction)."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification, DebertaV2Tokenizer

    from scoring.tests.tiny_models import TINY, train_spm

    sp = train_spm(d / "spm", pad_id=0, unk_id=3, bos_id=1, eos_id=2, control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    tok = DebertaV2Tokenizer(
        vocab_file=str(sp),
        bos_token="[CLS]",
        eos_token="[SEP]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="[MASK]",
    )
    tok.save_pretrained(d)
    config = DebertaV2Config(
        vocab_size=len(tok),
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=64,
        pos_att_type=["p2c", "c2p"],
        pad_token_id=tok.pad_token_id,
        num_labels=2,
        **TINY,
    )
    torch.manual_seed(0)
    model = DebertaV2ForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([5.0, 0.0] if lean == "entail" else [0.0, 5.0]))
    model.save_pretrained(d)
    raw = json.loads((d / "config.json").read_text())
    raw.pop("id2label", None)
    raw.pop("label2id", None)
    (d / "config.json").write_text(json.dumps(raw))
    return d


def test_nli_labels_are_read_by_index_when_the_config_names_none_and_by_name_otherwise(tmp_path):
    from transformers import AutoConfig

    from scoring.metrics.askqe import contradiction_index, nli_pairs

    config = AutoConfig.from_pretrained(str(_tiny_nli(tmp_path / "m", "contradict")))
    assert config.id2label == {0: "LABEL_0", 1: "LABEL_1"}  # what the stored config gives: no names
    assert contradiction_index(config) == 1  # the card's layout: [entailment, contradiction]
    named = AutoConfig.for_model(
        "deberta-v2", num_labels=3, id2label={0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}
    )
    assert contradiction_index(named) == 0
    # textA: the fact (the hypothesis); textB: the source (the premise), as the model card orders its pair
    assert nli_pairs("The source.", ["a fact"]) == [("a fact", "The source.")]


def test_nli_filter_keeps_or_drops_facts_and_falls_back_to_the_vanilla_questions(tmp_path, monkeypatch):
    from scoring.judges.stub import JudgeStubServer
    from scoring.registry import Segment, get_metric

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    seg = Segment(
        src="The museum will reopen next spring, and the garden stays closed.",
        mt="Das Museum öffnet im nächsten Frühjahr.",
        ref="",
        target_lang="de",
        source_lang="en",
    )
    with JudgeStubServer() as stub:
        results = {}
        for lean in ("entail", "contradict"):
            model = _tiny_nli(tmp_path / lean, lean)
            judge = {
                "model": "stub-judge",
                "base_url": stub.base_url,
                "cache_dir": str(tmp_path / "cache"),
                "concurrency": 4,
            }
            scorer = get_metric("askqe").build(judge=judge, nli_model=str(model))
            before = len(stub.served)
            results[lean] = (scorer.score([seg]), [c.prompt for c in stub.served[before:]])
            assert scorer.signature("de")["options"]["nli_model"] == str(model)
            scorer.close()
    kept, prompts = results["entail"]
    assert kept.extras["facts"][0] and any("Facts:" in p for p in prompts)
    dropped, prompts = results["contradict"]
    assert dropped.extras["facts"][0] == []  # every fact contradicted: none kept
    assert not any("\nFacts:" in p for p in prompts) and any("Write questions that check" in p for p in prompts)
    assert dropped.extras["questions"][0] and dropped.scores[0] is not None  # the vanilla questions scored it


# ---- GEMBA-MQM's three-shot prompt ------------------------------------------------------------------------------


def test_the_packaged_examples_score_the_same_under_the_authors_parser_free_and_structured():
    import contextlib
    import io

    gemba = pytest.importorskip("gemba.gemba_mqm_utils", reason="gemba==0.1.3 (test-only oracle) is not installed")
    from scoring.judges.mqm import parse_answer
    from scoring.judges.templates import packaged_template

    shots = packaged_template("gemba-mqm").shots
    assert len(shots) == 3 and len({(s["source_lang"], s["target_lang"]) for s in shots}) == 3
    for shot, want in zip(shots, (-6.0, -5.0, -25.0)):
        with contextlib.redirect_stdout(io.StringIO()):
            theirs = -float(-gemba.parse_mqm_answer(shot["answer"], normalize=False))
        assert (
            theirs
            == want
            == parse_answer(shot["answer"]).score
            == parse_answer(shot["structured_answer"], structured=True).score
        )


def test_a_prompt_file_with_a_shot_missing_a_field_is_refused_naming_it(tmp_path):
    from scoring.judges.templates import load_template
    from scoring.registry import MetricError

    path = tmp_path / "p.toml"
    path.write_text('version = "x"\nuser = "{source} -> {translation}"\n[[shots]]\nsource = "a"\nanswer = "b"\n')
    with pytest.raises(MetricError, match=r"p.toml: shot 1 lacks translation"):
        load_template(path)


def test_every_option_enters_the_signature_with_the_prompts_it_uses():
    from scoring.registry import get_metric

    judge = {"model": "stub-judge", "base_url": "http://127.0.0.1:9/v1"}
    cef = get_metric("cef").build(judge=judge).signature("de")
    batched = get_metric("cef").build(judge=judge, batch_answers="true", formula="paper-text").signature("de")
    assert (
        cef["options"]["batch_answers"] is False
        and cef["options"]["formula"] == "authors"
        and "cef-answer" in cef["prompts"]
    )
    assert batched["options"]["batch_answers"] is True and "cef-answers" in batched["prompts"]
    assert "cef-answer" not in batched["prompts"] and batched["options"]["formula"] == "paper-text"
    askqe = get_metric("askqe").build(judge=judge).signature("de")["options"]
    assert askqe["nli_model"] == "potsawee/deberta-v3-large-mnli" and askqe["decision_rule"] == "midpoint"
    assert askqe["normalization"] == "askqe" and askqe["missing_as_zero"] is True
    assert get_metric("askqe").build(judge=judge, nli_model="none").signature("de")["options"]["nli_model"] == "none"
    assert get_metric("gemba-mqm").build(judge=judge).signature("de")["options"]["reask"] is False
    assert (
        get_metric("gemba-mqm").build(judge=judge).signature("de")["prompts"]["gemba-mqm"]["version"] == "gemba-mqm-v2"
    )
