"""The inject command and the Celery task (queue routing, eager execution)."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from injection.models import Candidate, InjectionItem, InjectionRun

pytestmark = pytest.mark.django_db


def test_inject_command_runs_the_rule_backend(segments):
    out = io.StringIO()
    call_command(
        "inject",
        "demo",
        "--directions",
        "en-de,en-zh",
        "--kind",
        "mqm",
        "--backend",
        "rule",
        "--seed",
        "3",
        "--types",
        "Omission,Untranslated",
        stdout=out,
        verbosity=0,
    )
    run = InjectionRun.objects.get()
    assert f"run {run.pk} done: 20 done, 0 failed of 20" in out.getvalue()
    assert run.parameters["seed"] == 3 and Candidate.objects.filter(run=run).count() == 20
    assert set(Candidate.objects.values_list("error_type", flat=True)) == {"Omission", "Untranslated"}


def test_inject_command_resume_and_retry_failed(segments):
    out = io.StringIO()
    call_command(
        "inject",
        "demo",
        "--directions",
        "en-de",
        "--kind",
        "perturbation",
        "--backend",
        "rule",
        stdout=out,
        verbosity=0,
    )
    run = InjectionRun.objects.get()
    assert run.failed == 3 * 4  # Synonym, Intensifier, Expansion (No Impact), Alteration: rules refuse, with reasons
    assert f"--retry-failed {run.pk}" in out.getvalue()
    out = io.StringIO()
    call_command("inject", "--retry-failed", str(run.pk), stdout=out, verbosity=0)
    assert "12 failed item(s)" in out.getvalue()
    run.refresh_from_db()
    assert run.failed == 12 and InjectionItem.objects.filter(run=run, attempts=2).count() == 12
    assert Candidate.objects.filter(run=run).count() == run.done  # no second candidate for anything


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--backend", "rule"], "no project 'nope'"),
        (["demo", "--directions", "en-fr", "--backend", "rule"], "en-fr is not a direction of project demo"),
        (["demo", "--types", "Typo", "--backend", "rule"], "unknown mqm type 'Typo'"),
        (["demo", "--backend", "gemini"], "'gemini' is not one of"),
        (["--resume", "999"], "no injection run 999"),
        (["demo", "--kind", "perturbation", "--positions", "head", "--backend", "rule"], "'head' is not one of none"),
        (["demo", "--positions", "middle", "--backend", "rule"], "'middle' is not one of head, end"),
        (
            ["demo", "--backend", "openai", "--engine-option", "enforce_eager=true"],
            "only the vllm backend takes engine options",
        ),
        (["demo", "--backend", "vllm", "--engine-option", "enforce_eager"], "'enforce_eager' is not NAME=VALUE"),
        (["demo", "--backend", "vllm", "--engine-option", "model=other"], "give the model with --model"),
        # the run form's bounds hold for the command too
        (["demo", "--backend", "rule", "--rpm", "0"], "--rpm: must be at least 1"),
        (["demo", "--backend", "rule", "--rpm", "-5"], "--rpm: must be at least 1"),
        (["demo", "--backend", "rule", "--temperature", "-0.1"], "--temperature: must be from 0 to 2"),
        (["demo", "--backend", "rule", "--temperature", "nan"], "--temperature: must be from 0 to 2"),
        (["demo", "--backend", "rule", "--seed", str(2**63)], "--seed: must fit 64 bits"),
        (["--resume", "0"], "argument --resume: must be at least 1, got 0"),
        (["--retry-failed", "-1"], "argument --retry-failed: must be at least 1, got -1"),
        (["--resume", "1", "--retry-failed", "1"], "argument --retry-failed: not allowed with argument --resume"),
        (["demo", "--resume", "1"], "leave PROJECT out"),
        (
            ["demo", "--backend", "rule", "--queue", "--write-batch", "batch.jsonl"],
            "--queue and --write-batch exclude each other",
        ),
        (
            ["demo", "--backend", "rule", "--write-batch", "/nonexistent-dir/batch.jsonl"],
            "the directory /nonexistent-dir does not exist",
        ),
        (["demo", "--backend", "rule", "--write-batch", "/"], "--write-batch /: is a directory"),
    ],
)
def test_inject_command_rejects_bad_input_and_writes_nothing(segments, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("inject", *args, verbosity=0)
    assert not InjectionRun.objects.exists() and not InjectionItem.objects.exists()


@pytest.mark.parametrize("flag", ["--resume", "--retry-failed"])
def test_the_run_of_an_import_is_not_resumed(segments, flag):
    """An XQ-MEval import records its candidates under a run no backend generates: resuming it used to mark
    it failed ("unknown backend 'import'")."""
    run = InjectionRun.objects.create(
        project=segments[0].project, name="xqmeval-release", backend="import", kind="mqm", status="done"
    )
    with pytest.raises(CommandError, match=rf"run {run.pk} \(xqmeval-release\) was recorded by an import"):
        call_command("inject", flag, str(run.pk), verbosity=0)
    run.refresh_from_db()
    assert run.status == "done" and run.error == ""


def test_vllm_backend_absent_is_a_clear_command_error(segments):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:  # pragma: no cover — GPU workers
        pytest.skip("vllm installed: this checks the message where it is absent")
    with pytest.raises(CommandError, match="requirements-vllm.txt"):
        call_command(
            "inject",
            "demo",
            "--directions",
            "en-de",
            "--backend",
            "vllm",
            "--model",
            "Qwen/Qwen2.5-0.5B-Instruct",
            verbosity=0,
        )
    run = InjectionRun.objects.get()
    assert run.status == "failed" and "vllm" in run.error


def test_injection_tasks_go_to_the_llm_queue():
    from injection.tasks import execute_run_task
    from xqmeval.celery import app

    assert execute_run_task.name == "injection.execute_run"
    route = app.amqp.router.route({}, execute_run_task.name)
    assert route["queue"].name == "llm"


def test_task_executes_a_run(segments):
    from injection import services
    from injection.tasks import execute_run_task

    run = services.run_plan(
        spec=services.RunSpec(
            project=segments[0].project, kind="mqm", backend="rule", directions=["en-zh"], error_types=["Addition"]
        )
    )
    result = execute_run_task.apply(args=[run.pk]).get()
    assert result == {"run": run.pk, "status": "done", "done": 4, "failed": 0, "total": 4}
    # Idempotent: a second delivery of the same message (acks_late) changes nothing.
    assert execute_run_task.apply(args=[run.pk]).get()["done"] == 4
    assert Candidate.objects.filter(run=run).count() == 4


def test_vllm_run_batch_file_round_trip(segments, stub, tmp_path, monkeypatch):
    """inject --write-batch → (vllm run-batch, played here by the stub server answering each line over
    HTTP with the real openai client) → inject --read-batch-output."""
    import json

    from openai import OpenAI

    requests_file, output_file = tmp_path / "requests.jsonl", tmp_path / "output.jsonl"
    out = io.StringIO()
    call_command(
        "inject",
        "demo",
        "--directions",
        "en-zh",
        "--backend",
        "batch",
        "--base-url",
        stub.base_url,
        "--model",
        "Qwen/Qwen2.5-7B-Instruct",
        "--types",
        "Omission",
        "--write-batch",
        str(requests_file),
        stdout=out,
        verbosity=0,
    )
    run = InjectionRun.objects.get()
    assert "4 request(s)" in out.getvalue() and f"--read-batch-output {run.pk}" in out.getvalue()
    client = OpenAI(api_key="EMPTY", base_url=stub.base_url)
    lines = []
    for raw in requests_file.read_text().splitlines():
        request = json.loads(raw)
        assert request["url"] == "/v1/chat/completions" and request["body"]["model"] == "Qwen/Qwen2.5-7B-Instruct"
        body = client.post("/chat/completions", cast_to=object, body=request["body"])
        lines.append(
            json.dumps(
                {
                    "id": "vllm-1",
                    "custom_id": request["custom_id"],
                    "response": {"status_code": 200, "body": body},
                    "error": None,
                }
            )
        )
    output_file.write_text("\n".join(lines[:3]) + "\n")  # one answer missing: that item stays pending
    call_command("inject", "--read-batch-output", str(run.pk), str(output_file), stdout=io.StringIO(), verbosity=0)
    run.refresh_from_db()
    assert run.done == 3 and run.status == "pending" and Candidate.objects.filter(run=run).count() == 3
    output_file.write_text("\n".join(lines) + "\n")  # the full file again: only the missing one is added
    call_command("inject", "--read-batch-output", str(run.pk), str(output_file), stdout=io.StringIO(), verbosity=0)
    run.refresh_from_db()
    assert run.done == 4 and run.status == "done" and Candidate.objects.filter(run=run).count() == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(CommandError, match="line 1"):
        call_command("inject", "--read-batch-output", str(run.pk), str(bad), verbosity=0)
