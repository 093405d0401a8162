"""Pure modules, tested directly: post-processing, checks, prompts, edit types, rate limiter, backoff, pricing, batch lines."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from core.domain.edit_types import EDIT_TYPES, UnknownEditType, edit_type, resolve_types
from core.domain.units import Edit, diff_edit
from injection.backends.base import EditTask, GenerationRequest, Sampling
from injection.backends.batch import build_batch_lines, parse_batch_output, to_jsonl
from injection.domain.checks import CHECKS, english_guess, run_checks
from injection.domain.postprocess import OutputRejected, extract_sentence, process_output
from injection.domain.prompts import TEMPLATES, build_prompt
from llm_client.limits import RateLimiter, RetryPolicy
from llm_client.pricing import estimate_cost
from tests.support.asserts import every

REF = "Der Hund schläft heute im grünen Haus am See."


# ---- post-processing (SPEC §1) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "Der Hund schläft heute im roten Haus am See.",
        '{"updated_sentence": "Der Hund schläft heute im roten Haus am See."}',
        '```json\n{"updated_sentence": "Der Hund schläft heute im roten Haus am See."}\n```',
        "Step 1: pick.\nStep 2: edit.\n**Updated sentence:** Der Hund schläft heute im roten Haus am See.",
        "Updated sentence: wrong draft\nFinal output: <head>Der Hund schläft heute</head> <end>im roten Haus am See.</end>",
        "> Der Hund schläft heute im roten Haus am See.\n\nok",
        '"Der Hund schläft heute im roten Haus am See."',
        "Here you go:\n\nDer Hund schläft heute im <v>roten</v> Haus am See.\n\nI changed the colour.",
    ],
)
def test_extract_sentence_variants(raw):
    assert extract_sentence(raw, REF) == "Der Hund schläft heute im roten Haus am See."


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty response"),
        ("   \n ", "empty response"),
        ('{"foo": 1}', "without a string field"),
        ("Updated sentence:", "no sentence"),
    ],
)
def test_unusable_answers_are_rejected_with_a_reason(raw, reason):
    with pytest.raises(OutputRejected, match=reason):
        extract_sentence(raw, REF)


def test_span_comes_from_the_diff_not_the_models_markup():
    # The model marked the wrong word; the span is where the text really changed.
    processed = process_output("Der Hund <v>schläft</v> heute im roten Haus am See.", REF, "de")
    assert processed.edit == Edit(5, 6, ("roten",)) and processed.regions == 1


def test_chinese_span_in_characters():
    ref = "他对糖尿病能否治愈持怀疑态度。"
    processed = process_output('{"updated_sentence": "他对diabetes能否治愈持怀疑态度。"}', ref, "zh")
    assert processed.edit == Edit(2, 5, tuple("diabetes"))


# ---- checks -----------------------------------------------------------------------------------------------


def _checks(
    candidate, *, error_type="Mistranslation", position="end", kind="mqm", language="de", source="", reference=REF, **kw
):
    edit = diff_edit(reference, candidate, language)
    from core.domain.units import count_edited_regions

    return run_checks(
        reference=reference,
        candidate_text=candidate,
        edit=edit,
        language=language,
        kind=kind,
        error_type=error_type,
        position=position,
        source=source,
        regions=count_edited_regions(reference, candidate, language),
        **kw,
    )


def test_clean_candidate_passes_every_applicable_check():
    checks, flags = _checks("Der Hund schläft heute im roten Haus am See.")
    assert flags == []
    assert {"changed", "single_region", "in_requested_half", "length_ratio", "edit_size", "candidate_language"} <= set(
        checks
    )


@pytest.mark.parametrize(
    ("candidate", "kwargs", "flag"),
    [
        (REF, {}, "changed"),
        ("Der Katze schläft heute im roten Haus am See.", {}, "single_region"),
        ("Der Katze schläft heute im grünen Haus am See.", {"position": "end"}, "in_requested_half"),
        (
            "Der Hund schläft heute im grünen Haus am See und träumt von vielen großen Knochen und Katzen.",
            {"error_type": "Addition"},
            "length_ratio",
        ),
        ("Der Hund schläft heute im grünen Haus am Meer.", {"error_type": "Omission"}, "omission_deletes"),
        (
            "Der Hund schläft heute im green Haus am See.",
            {"error_type": "Untranslated", "source": "The dog sleeps in the green house."},
            None,
        ),
        (
            "Der Hund schläft heute im Katze Haus am See.",
            {"error_type": "Untranslated", "source": "The dog sleeps in the green house."},
            "untranslated_english",
        ),
        ("The weather in Paris was lovely yesterday and nobody cared.", {}, "candidate_language"),
        (REF, {"marked_outside_ok": False}, "local_edit"),
    ],
)
def test_each_check_fails_when_it_should(candidate, kwargs, flag):
    checks, flags = _checks(candidate, **kwargs)
    if flag is None:
        assert "untranslated_english" in checks and checks["untranslated_english"]["passed"]
    else:
        assert flag in flags and checks[flag]["detail"], checks


def test_length_ratio_is_configurable_and_not_applied_to_untranslated_zh_ja(monkeypatch):
    long = "Der Hund schläft heute im grünen Haus am See, sagt man."
    assert "length_ratio" not in _checks(long, error_type="Addition")[1]
    monkeypatch.setenv("INJECTION_LENGTH_RATIO", "0.9,1.1")
    assert "length_ratio" in _checks(long, error_type="Addition")[1]
    ref = "他对糖尿病能否治愈持怀疑态度。"
    checks, _ = _checks(
        "他对diabetes can be cured持怀疑态度。",
        reference=ref,
        language="zh",
        error_type="Untranslated",
        position="head",
        source="He is skeptical about whether diabetes can be cured.",
    )
    assert "length_ratio" not in checks and checks["untranslated_english"]["passed"]


def test_perturbation_limits():
    ok = _checks(
        "Der Hund schläft heute im grünen Haus am Meer.", kind="perturbation", error_type="Synonym", position="none"
    )
    assert ok[1] == []
    too_much = _checks(
        "Die Katze döst gestern im blauen Haus am See.", kind="perturbation", error_type="Synonym", position="none"
    )
    assert "perturbation_limit" in too_much[1]
    reorder = _checks(
        "Der Hund schläft im grünen Haus heute am See.", kind="perturbation", error_type="Word Order", position="none"
    )
    assert reorder[1] == []
    not_reorder = _checks(
        "Der Hund schläft im grünen Haus am See.", kind="perturbation", error_type="Word Order", position="none"
    )
    assert "perturbation_limit" in not_reorder[1]
    omission = _checks("Der Hund schläft im Haus am See.", kind="perturbation", error_type="Omission", position="none")
    assert omission[1] == [] and "single_region" not in omission[0]


def test_language_identifier_is_the_bundled_lite_model_offline(monkeypatch, tmp_path):
    # An empty cache directory and no proxy: the lite model must come from the wheel, never a download.
    monkeypatch.setenv("FTLANG_CACHE", str(tmp_path))
    english, detail = english_guess("the new rules apply to everyone")
    assert english and detail.startswith("en ")
    assert not any(tmp_path.iterdir())


def test_check_registry_names_are_stable():
    assert {
        "changed",
        "single_region",
        "local_edit",
        "length_ratio",
        "in_requested_half",
        "untranslated_english",
        "omission_deletes",
        "perturbation_limit",
        "edit_size",
        "candidate_language",
    } <= set(CHECKS)


# ---- prompts and types --------------------------------------------------------------------------------------


def test_every_edit_type_has_a_versioned_prompt():
    assert set(TEMPLATES) == set(EDIT_TYPES)
    assert len({t.version for t in TEMPLATES.values()}) == len(TEMPLATES)


def test_mqm_prompt_marks_the_halves_and_gives_the_source_only_for_untranslated():
    source = "The dog sleeps today in the green house by the lake."
    prompt = build_prompt(edit_type("mqm", "Untranslated"), reference=REF, source=source, language="de", position="end")
    user = prompt.messages[-1]["content"]
    assert "<head>Der Hund schläft heute</head> <end>im grünen Haus am See.</end>" in user
    assert "into the <end> half only" in user and f"English source: {source}" in user and "German" in user
    other = build_prompt(edit_type("mqm", "Omission"), reference=REF, source=source, language="de", position="head")
    assert "English source:" not in other.messages[-1]["content"] and other.version == "xqmeval-omission-v1"
    zh = build_prompt(
        edit_type("mqm", "Addition"), reference="他对糖尿病持怀疑态度。", source="", language="zh", position="head"
    )
    assert "</head><end>" in zh.messages[-1]["content"]


def test_perturbation_prompts_are_data_files_in_our_own_words(tmp_path):
    prompt = build_prompt(
        edit_type("perturbation", "Alteration"), reference=REF, source="", language="de", position="none"
    )
    user = prompt.messages[-1]["content"]
    assert "reverse the meaning" in user and user.endswith(f"Sentence: {REF}\n\nChanged sentence:")
    assert prompt.version == "askqe-alteration-v2"
    # none of the AskQE paper's sentences or its Spanish examples are left
    for phrase in (
        "Your goal is to perturb the sentence",
        "Please make sure",
        "Output only the perturbed",
        "changing the affirmative sentence into negation",
        "según el protocolo de cada consultorio",
    ):
        assert every(phrase not in t.user for t in TEMPLATES.values())
        assert phrase not in user
    # a user's file replaces one prompt; its hash marks the version; a bad file is a clear error naming the field
    from injection.domain.prompts import PromptFileError, perturbation_overrides

    mine = tmp_path / "alt.toml"
    mine.write_text(
        'version = "mine-1"\ninstruction = "say the opposite."\nuser = "{instruction} {original}"\n', encoding="utf-8"
    )
    overrides = perturbation_overrides([f"perturbation-alteration={mine}"])
    custom = build_prompt(
        edit_type("perturbation", "Alteration"),
        reference=REF,
        source="",
        language="de",
        position="none",
        overrides=overrides,
    )
    assert custom.messages[-1]["content"] == f"say the opposite. {REF}" and custom.version.startswith("mine-1@")
    other = build_prompt(
        edit_type("perturbation", "Omission"),
        reference=REF,
        source="",
        language="de",
        position="none",
        overrides=overrides,
    )
    assert other.version == "askqe-omission-v2"
    bad = tmp_path / "bad.toml"
    bad.write_text('version = "x"\ninstruction = "y"\nuser = "{sentence}"\n', encoding="utf-8")
    with pytest.raises(PromptFileError, match="unknown placeholder"):
        perturbation_overrides([f"perturbation-alteration={bad}"])
    with pytest.raises(PromptFileError, match="no such prompt"):
        perturbation_overrides([f"perturbation-nothing={mine}"])


def test_unknown_types_are_clear_errors():
    with pytest.raises(UnknownEditType, match="known: Addition"):
        resolve_types("mqm", ["Additon"])
    assert [t.name for t in resolve_types("perturbation", [])][:2] == ["Spelling", "Word Order"]


# ---- limits, pricing, batch lines ---------------------------------------------------------------------------


def test_rate_limiter_spaces_starts():
    async def go():
        limiter = RateLimiter(rpm=1200)  # one start per 50 ms
        starts = []
        for _ in range(5):
            await limiter.acquire()
            starts.append(time.monotonic())
        return starts

    starts = asyncio.run(go())
    assert every(b - a >= 0.045 for a, b in zip(starts, starts[1:]))


def test_rate_limiter_keeps_its_spacing_after_a_start_that_ran_late():
    """Three requests wait for their slots while the event loop is held up (a loaded machine): the late start
    must not let the next one catch up with it."""

    async def go():
        limiter = RateLimiter(rpm=1200)  # one start per 50 ms
        starts = []

        async def request():
            await limiter.acquire()
            starts.append(time.monotonic())

        async def hold_up_the_loop():
            await asyncio.sleep(0.01)
            time.sleep(0.08)  # blocks the loop past the second request's slot

        await asyncio.gather(request(), request(), request(), hold_up_the_loop())
        return starts

    starts = asyncio.run(go())
    assert len(starts) == 3
    assert every(b - a >= 0.045 for a, b in zip(starts, starts[1:])), starts


def test_backoff_grows_with_jitter_and_respects_retry_after():
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    rng = random.Random(0)
    caps = [max(policy.delay(attempt, rng) for _ in range(200)) for attempt in (1, 2, 3, 4, 5)]
    assert caps[0] <= 1.0 and 3.0 < caps[2] <= 4.0 and caps[4] <= 8.0
    assert policy.delay(1, rng, retry_after=5.0) >= 5.0


def test_cost_estimate(monkeypatch):
    assert estimate_cost("gpt-4o", 1_000_000, 0) == 2.5
    assert estimate_cost("gpt-4o", 0, 1_000_000, discount=0.5) == 5
    assert estimate_cost("my-local-llama", 10**6, 10**6) == 0
    monkeypatch.setenv("INJECTION_PRICES", json.dumps({"my-local-llama": [1, 2]}))
    assert estimate_cost("my-local-llama", 10**6, 10**6) == 3


def test_one_jsonl_builder_for_openai_batch_and_vllm_run_batch():
    task = EditTask(REF, "", "de", "mqm", "Omission", "head")
    requests = [GenerationRequest(str(i), ({"role": "user", "content": f"q{i}"},), task) for i in range(3)]
    lines = build_batch_lines(requests, Sampling(model="gpt-4o", seed=42, temperature=0.5))
    assert [json.loads(x)["custom_id"] for x in to_jsonl(lines).decode().splitlines()] == ["0", "1", "2"]
    assert lines[0]["url"] == "/v1/chat/completions" and lines[0]["body"]["seed"] == 42
    assert lines[0]["body"]["response_format"]["type"] == "json_schema"
    output = "\n".join(
        [
            json.dumps(
                {
                    "custom_id": "1",
                    "response": {
                        "status_code": 200,
                        "body": {
                            "model": "gpt-4o",
                            "choices": [
                                {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
                            ],
                            "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                        },
                    },
                }
            ),
            json.dumps(
                {
                    "custom_id": "0",
                    "response": {"status_code": 429, "body": {"error": {"message": "slow down"}}},
                    "error": None,
                }
            ),
        ]
    )
    results = parse_batch_output(output, expected=["0", "1", "2"])
    assert results["1"].ok and results["1"].prompt_tokens == 3
    assert not results["0"].ok and results["0"].retryable and "429" in results["0"].error
    assert results["2"].error == "missing from the batch output"
    with pytest.raises(ValueError, match="line 1"):
        parse_batch_output("not json")


def test_engine_options_are_read_as_json_where_they_parse():
    from injection.backends.vllm_engine import parse_engine_options

    assert parse_engine_options(
        [
            "gpu_memory_utilization=0.5",
            " enforce_eager=true",
            "",
            "dtype=bfloat16",
            'hf_overrides={"rope_theta": 1e6}',
            "max_model_len = 4096",
        ]
    ) == {
        "gpu_memory_utilization": 0.5,
        "enforce_eager": True,
        "dtype": "bfloat16",
        "hf_overrides": {"rope_theta": 1e6},
        "max_model_len": 4096,
    }
    for bad in ("enforce_eager", "=1", "Max-Len=3", "model=x"):
        with pytest.raises(ValueError):
            parse_engine_options([bad])


def test_vllm_backend_is_import_guarded():
    import importlib.util

    from injection.backends import BackendUnavailable, get_backend

    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(BackendUnavailable, match="requirements-vllm.txt"):
            get_backend("vllm", Sampling(model="Qwen/Qwen2.5-0.5B-Instruct"))
    else:  # pragma: no cover — a GPU worker with vllm installed
        assert get_backend("vllm", Sampling(model="Qwen/Qwen2.5-0.5B-Instruct")).name == "vllm"


def test_edited_regions_merges_one_character_anchors_but_not_real_gaps():
    from injection.domain.checks import edited_regions

    ref = "研究人员认为这种恐龙的羽毛可能用于展示。"
    one_phrase = (
        "研究人员认为这种鸟类的翅膀大概用于展示。"  # 恐龙→鸟类, 羽毛→翅膀, 可能→大概 around 的 (one rewritten phrase)
    )
    assert edited_regions(ref, one_phrase, "zh") == 1
    two_places = "专家认为这种恐龙的羽毛可能用于飞行。"
    assert edited_regions(ref, two_places, "zh") == 2
    assert edited_regions("Der Hund schläft heute im Haus.", "Die Katze schläft heute im Garten.", "de") == 2
    # A rewritten phrase that keeps two words ("Hund und") is one region for tokens too.
    assert edited_regions("Der Hund und die Katze schlafen.", "Ein Hund und eine Katze schlafen.", "de") == 1
    checks, flags = _checks(
        one_phrase, reference=ref, language="zh", position="end", kind="mqm", error_type="Mistranslation"
    )
    assert "single_region" not in flags
