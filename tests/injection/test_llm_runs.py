"""Runs against a real OpenAI-compatible HTTP server on 127.0.0.1 (the real `openai` client over HTTP):
scripted latency, 429s, 500s, timeouts, empty, refused, malformed and off-target answers, and the Batch API."""

from __future__ import annotations

import pytest

from core.domain.units import apply_edit, split_units
from injection import services
from injection.models import Candidate, InjectionItem, InjectionRun

pytestmark = pytest.mark.django_db(transaction=True)

REF_DE_0 = "Am Montag haben die Wisenschaftler"  # a substring of the first en-de reference, to script its requests


def _run(project, stub, **overrides) -> InjectionRun:
    spec = dict(
        project=project,
        kind="mqm",
        backend="openai",
        directions=["en-de", "en-zh"],
        model="gpt-4o",
        base_url=stub.base_url,
        concurrency=4,
        retry_base_delay=0.01,
        timeout=2.0,
        max_attempts=4,
    )
    spec.update(overrides)
    run = services.run_plan(spec=services.RunSpec(**spec))
    return services.run_execute(run_id=run.pk)


def _spans_round_trip(run: InjectionRun) -> None:
    for candidate in run.candidates.select_related("segment__direction__target"):
        language = candidate.segment.direction.target.code
        from core.domain.units import Edit

        edit = Edit(candidate.span_start, candidate.span_end, tuple(split_units(candidate.edit_text, language)))
        assert split_units(apply_edit(candidate.segment.reference, edit, language), language) == split_units(
            candidate.text, language
        )


def test_clean_run_stores_candidates_with_provenance_and_checks(project, segments, stub, llm_env):
    run = _run(project, stub)
    assert run.status == InjectionRun.Status.DONE
    assert run.total == 5 * 8 and run.done == run.total and run.failed == 0
    assert Candidate.objects.filter(run=run).count() == run.total
    candidate = Candidate.objects.filter(
        run=run, error_type="Addition", position="end", segment__direction__code="en-de"
    ).first()
    assert candidate.prompt_version == "xqmeval-addition-v1"
    assert candidate.model == "gpt-4o" and candidate.backend == "openai"
    assert candidate.sampling["temperature"] == 0.5 and candidate.sampling["seed"] == 42
    assert candidate.prompt_tokens > 0 and candidate.completion_tokens > 0 and candidate.cost_usd > 0
    assert '"updated_sentence"' in candidate.raw_output  # structured output asked for and received
    assert candidate.flags == [] and candidate.checks["in_requested_half"]["passed"]
    assert run.prompt_tokens > 0 and run.cost_usd > 0
    _spans_round_trip(run)
    # The prompt showed the halves and asked for the requested one.
    prompts = [c.prompt for c in stub.calls_matching("<end>")]
    assert any("into the <end> half only" in p for p in prompts) and any(
        "into the <head> half only" in p for p in prompts
    )


def test_transient_faults_are_retried_with_backoff(project, segments, stub, llm_env):
    stub.script(REF_DE_0, "429", "500", "timeout", "malformed", "nochoices")
    run = _run(project, stub, max_attempts=8, timeout=0.5)
    assert run.failed == 0 and run.done == run.total
    items = InjectionItem.objects.filter(run=run, segment__external_id="0", segment__direction__code="en-de")
    assert sum(i.attempts for i in items) == items.count() + 5  # five scripted faults, each retried once


def test_persistent_faults_fail_the_item_with_its_reason_and_it_can_be_retried_alone(project, segments, stub, llm_env):
    stub.script("Wisenschaftler", *(["500"] * 4))  # the first de item: every attempt fails
    run = _run(project, stub, error_types=["Omission"], positions=["head"], directions=["en-de"])
    assert run.status == InjectionRun.Status.DONE and run.failed == 1 and run.done == run.total - 1
    failed = InjectionItem.objects.get(run=run, status=InjectionItem.Status.FAILED)
    assert "HTTP 500" in failed.error and failed.retryable and failed.attempts == 4
    assert not Candidate.objects.filter(run=run, segment=failed.segment).exists()
    calls_before = len(stub.state.calls)
    assert services.run_reset_failed(run=run) == 1
    run = services.run_execute(run_id=run.pk)
    assert run.failed == 0 and run.done == run.total
    assert len(stub.state.calls) == calls_before + 1  # only the failed item was asked again
    assert Candidate.objects.filter(run=run).count() == run.total


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("empty", "empty response"),
        ("refuse", "refused: I can't help"),
        ("truncated", "answer cut off at the token limit"),
    ],
)
def test_empty_refused_and_cut_off_answers_are_recorded_failures(project, segments, stub, llm_env, behaviour, expected):
    stub.script("Wisenschaftler", behaviour)
    run = _run(project, stub, error_types=["Mistranslation"], positions=["end"], directions=["en-de"])
    failed = InjectionItem.objects.get(run=run, status=InjectionItem.Status.FAILED)
    assert failed.error.startswith(expected) and not failed.retryable
    assert run.done == run.total - 1


def test_off_target_and_unchanged_answers_are_flagged_not_dropped(project, segments, stub, llm_env):
    stub.script("Wisenschaftler", "offtarget")
    stub.script("Führende Forscher", "same")
    run = _run(project, stub, error_types=["Mistranslation"], positions=["head"], directions=["en-de"])
    assert run.done == run.total == 3
    off = Candidate.objects.get(run=run, segment__external_id="0")
    assert {"candidate_language", "edit_size", "in_requested_half"} <= set(off.flags)
    assert "not read as de" in off.checks["candidate_language"]["detail"]
    same = Candidate.objects.get(run=run, segment__external_id="1")
    assert "changed" in same.flags and same.checks["changed"]["detail"] == "the candidate equals the reference"
    clean = Candidate.objects.get(run=run, segment__external_id="2")
    assert clean.flags == []
    assert set(Candidate.objects.filter(run=run, flags__icontains='"changed"').values_list("pk", flat=True)) == {
        same.pk
    }


def test_server_without_structured_output_gets_plain_text_prompts(project, segments, stub, llm_env):
    stub.state.reject_response_format = True
    stub.script("Wisenschaftler", "prose")
    run = _run(project, stub, directions=["en-de"], error_types=["Addition"])
    assert run.done == run.total and run.failed == 0
    chatty = [
        c for c in Candidate.objects.filter(run=run, segment__external_id="0") if c.raw_output.startswith("Sure!")
    ]
    assert len(chatty) == 1 and "**Updated sentence:**" in chatty[0].raw_output
    chatty = chatty[0]
    assert chatty.flags == [] and "zusätzlich erfunden" in chatty.edit_text


def test_rpm_budget_spaces_requests(project, segments, stub, llm_env):
    import time

    start = time.monotonic()
    run = _run(
        project, stub, directions=["en-de"], error_types=["Addition"], rpm=600, concurrency=8
    )  # 6 requests, 0.1 s apart
    elapsed = time.monotonic() - start
    starts = sorted(c.at for c in stub.state.calls)
    assert run.done == 6
    # Five gaps of 0.1 s between six starts (arrival times jitter a little; their span does not shrink).
    assert starts[-1] - starts[0] >= 0.45
    assert elapsed >= 0.5


def test_batch_api_run_joins_results_on_custom_id(project, segments, stub, llm_env):
    stub.script("Führende Forscher", "500")  # one line of the batch fails
    run = _run(
        project,
        stub,
        backend="batch",
        directions=["en-de"],
        error_types=["Omission", "Untranslated"],
        poll_interval=0.01,
    )
    assert run.total == 12 and run.done == 11 and run.failed == 1
    assert run.parameters["batch_id"].startswith("batch-")
    uploads = [c for c in stub.state.calls if c.behaviour == "upload"]
    assert len(uploads) == 1
    failed = InjectionItem.objects.get(run=run, status=InjectionItem.Status.FAILED)
    assert "HTTP 500" in failed.error and failed.segment.external_id == "1"
    candidate = Candidate.objects.filter(run=run, error_type="Untranslated").first()
    assert candidate.checks["untranslated_english"]["passed"], candidate.checks
    assert candidate.cost_usd > 0  # half price, still a price
    _spans_round_trip(run)
    # Retrying the failed line submits a new batch with only that line.
    services.run_reset_failed(run=run)
    run = services.run_execute(run_id=run.pk)
    assert run.done == 12 and len([c for c in stub.state.calls if c.behaviour == "upload"]) == 2


def test_resumed_batch_run_polls_the_same_batch(project, segments, stub, llm_env):
    run = services.run_plan(
        spec=services.RunSpec(
            project=project,
            kind="mqm",
            backend="batch",
            directions=["en-de"],
            error_types=["Omission"],
            model="gpt-4o",
            base_url=stub.base_url,
            poll_interval=0.01,
        )
    )
    # A first worker submitted the batch and died before saving anything.
    from injection.backends import get_backend
    from injection.services import _request, _sampling

    items = list(run.items.select_related("segment__direction__target"))
    backend = get_backend(
        "batch",
        _sampling(run),
        base_url=stub.base_url,
        poll_interval=0.01,
        on_submitted=lambda bid: InjectionRun.objects.filter(pk=run.pk).update(
            parameters={**run.parameters, "batch_id": bid}
        ),
    )
    generator = backend.generate([_request(i, _sampling(run)) for i in items])
    next(generator)
    generator.close()
    assert InjectionItem.objects.filter(run=run, status="pending").count() == run.total
    run = services.run_execute(run_id=run.pk)
    assert run.done == run.total
    assert len([c for c in stub.state.calls if c.behaviour == "batch"]) == 1  # paid once


def test_missing_key_for_openai_is_a_clear_error(project, segments, monkeypatch):
    from injection.backends import BackendUnavailable

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = services.RunSpec(project=project, kind="mqm", backend="openai", directions=["en-de"])
    with pytest.raises(services.RunRejected, match="--endpoint: endpoint openai needs OPENAI_API_KEY"):
        services.run_plan(spec=spec)  # no run until the backend can start (#37.6)
    assert not InjectionRun.objects.exists()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set-while-planning")
    run = services.run_plan(spec=spec)
    monkeypatch.delenv("OPENAI_API_KEY")  # and gone by the time a worker runs it
    with pytest.raises(BackendUnavailable, match="OPENAI_API_KEY"):
        services.run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == InjectionRun.Status.FAILED and "OPENAI_API_KEY" in run.error
    assert "sk-" not in run.error


def test_the_key_is_never_stored(project, segments, stub, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value-123")
    stub.script("Wisenschaftler", "401")  # the server echoes part of the key in its error message
    run = _run(project, stub, directions=["en-de"], error_types=["Addition"])
    failed = InjectionItem.objects.get(run=run, status="failed")
    assert "HTTP 401" in failed.error and "[redacted]" in failed.error and "sk-secr" not in failed.error
    assert not failed.retryable and failed.attempts == 1
    from django.core import serializers

    dumped = serializers.serialize("json", [run, *run.items.all(), *run.candidates.all()])
    assert "sk-secret-value-123" not in dumped and "sk-secr" not in dumped


@pytest.mark.shared_data
@pytest.mark.parametrize("backend", ["openai", "batch"])
def test_llm_backends_on_the_shared_references_of_all_languages(shared_data, project, stub, llm_env, backend):
    import pandas as pd

    from core.corpus.domain import CorpusRow
    from core.corpus.services import corpus_rows_import
    from core.services import project_directions_add

    languages = ["de", "es", "fr", "id", "ja", "lo", "si", "vi", "zh"]
    project_directions_add(project=project, codes=[f"en-{lang}" for lang in languages])
    for language in languages:
        frame = (
            pd.read_parquet(shared_data / "candidates" / f"en-{language}-Omission.parquet")
            .drop_duplicates("segment_id")
            .head(2)
        )
        rows = [
            CorpusRow(str(r.segment_id), r.src, r.ref, f"{language} row {i}") for i, r in enumerate(frame.itertuples())
        ]
        corpus_rows_import(project=project, direction_code=f"en-{language}", rows=rows, source_name="shared")
    run = _run(
        project,
        stub,
        backend=backend,
        directions=[f"en-{lang}" for lang in languages],
        concurrency=16,
        poll_interval=0.01,
    )
    assert run.status == "done" and run.total == 9 * 2 * 8 and run.done == run.total
    _spans_round_trip(run)
    for candidate in run.candidates.all():
        assert candidate.prompt_version.startswith("xqmeval-") and candidate.model == "gpt-4o" and candidate.raw_output
        assert (
            set(candidate.checks) >= {"changed", "single_region", "in_requested_half"} and candidate.prompt_tokens > 0
        )


def test_perturbation_run_with_a_users_prompt_file(project, segments, stub, llm_env, tmp_path):
    mine = tmp_path / "omission.toml"
    mine.write_text(
        'version = "lab-omission-1"\ninstruction = "drop two words."\n'
        'user = "Drop words ({instruction}) from this {language} text.\\n\\nSentence: {original}\\n\\nChanged sentence:"\n',
        encoding="utf-8",
    )
    run = _run(
        project,
        stub,
        kind="perturbation",
        error_types=["Omission", "Synonym"],
        directions=["en-de"],
        prompt_files=[f"perturbation-omission={mine}"],
    )
    assert run.status == InjectionRun.Status.DONE and run.failed == 0
    versions = set(Candidate.objects.filter(run=run, error_type="Omission").values_list("prompt_version", flat=True))
    assert len(versions) == 1 and versions.pop().startswith("lab-omission-1@")
    assert set(Candidate.objects.filter(run=run, error_type="Synonym").values_list("prompt_version", flat=True)) == {
        "askqe-synonym-v2"
    }
    assert any("Drop words (drop two words.) from this German text." in c.prompt for c in stub.state.calls)
    assert "lab-omission-1" in run.parameters["prompt_files"]["perturbation-omission"]  # the text travels with the run
    bad = tmp_path / "bad.toml"
    bad.write_text('version = "x"\ninstruction = "y"\nuser = "{sentence}"\n', encoding="utf-8")
    with pytest.raises(services.RunRejected, match="unknown placeholder"):
        _run(project, stub, kind="perturbation", prompt_files=[f"perturbation-omission={bad}"], name="bad")
