"""LLM answers are bounded (#48.2), against the real stub server over HTTP: an answer past the size cap and a
JSON answer nested past the nesting cap each fail their item with the reason, the run goes on and finishes,
and the raw answer kept beside a candidate is cut to its cap."""

from __future__ import annotations

import pytest

from injection import services
from injection.models import Candidate, InjectionItem, InjectionRun
from llm_client import MAX_ANSWER_BYTES, MAX_RAW_OUTPUT_CHARS

pytestmark = pytest.mark.django_db(transaction=True)


def _run(project, stub) -> InjectionRun:
    spec = services.RunSpec(
        project=project,
        kind="mqm",
        backend="openai",
        directions=["en-de"],
        model="gpt-4o",
        base_url=stub.base_url,
        concurrency=2,
        retry_base_delay=0.01,
        timeout=10.0,
        max_attempts=3,
        error_types=["Mistranslation"],
        positions=["end"],
    )
    return services.run_execute(run_id=services.run_plan(spec=spec).pk)


@pytest.mark.parametrize("behaviour", ["huge", "huge-stream"])
def test_a_3_mb_answer_fails_its_item_and_the_run_completes(project, segments, stub, llm_env, behaviour):
    stub.script("Wisenschaftler", behaviour)
    run = _run(project, stub)
    assert run.status == InjectionRun.Status.DONE and run.total == 3
    assert run.done == 2 and run.failed == 1
    failed = InjectionItem.objects.get(run=run, status=InjectionItem.Status.FAILED)
    assert failed.segment.external_id == "0"
    assert "answer too large" in failed.error and f"{MAX_ANSWER_BYTES:,} bytes" in failed.error
    assert not failed.retryable and failed.attempts == 1  # the same question would get the same answer
    assert failed.raw_output == ""  # nothing of it was kept
    assert not Candidate.objects.filter(run=run, segment=failed.segment).exists()


def test_an_answer_nested_100000_deep_fails_its_item_and_the_run_completes(project, segments, stub, llm_env):
    stub.script("Wisenschaftler", "deep")
    run = _run(project, stub)
    assert run.status == InjectionRun.Status.DONE and run.done == 2 and run.failed == 1
    failed = InjectionItem.objects.get(run=run, status=InjectionItem.Status.FAILED)
    assert failed.error == "unusable answer: JSON nested 100,001 deep, more than the 32 allowed"
    assert len(failed.raw_output) < MAX_RAW_OUTPUT_CHARS + 100 and "more characters not kept" in failed.raw_output


def test_the_raw_answer_kept_beside_a_candidate_is_cut_to_its_cap(project, segments, stub, llm_env):
    stub.script("Wisenschaftler", "verbose")  # 100,000 characters of reasoning, then the sentence
    run = _run(project, stub)
    assert run.done == run.total == 3
    candidate = Candidate.objects.get(run=run, segment__external_id="0")
    assert candidate.text.startswith("Am Montag haben die Wisenschaftler")  # read from the whole answer
    assert candidate.raw_output.startswith("Reasoning: ich denke nach")
    assert len(candidate.raw_output) <= MAX_RAW_OUTPUT_CHARS + 100
    assert candidate.raw_output.endswith("more characters not kept]")
