"""``perf/bench_gpu.py`` on the CPU: a lent GPU comes with minutes of device time, so the script a GPU session
runs is checked here first, every metric's path (build at the real layout with small widths, save in the
metric's format, ``python -m scoring run``, and for COMET-22 and xCOMET the ``comet-score`` comparison)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.tests.releases import write_release_from_shared

REPO = Path(__file__).resolve().parents[2]


def run_bench(tmp_path: Path, shared: Path, command: str, *args: str) -> Path:
    """``perf/bench_gpu.py prepare``, then ``COMMAND`` on the CPU over a two-direction release of the shared data;
    returns its --out folder (its --work folder is tmp_path/work)."""
    script = str(REPO / "perf" / "bench_gpu.py")
    env = {**os.environ, "XQMEVAL_SHARED_DATA": str(shared)}
    subprocess.run([sys.executable, script, "prepare", str(tmp_path / "tok")], check=True, capture_output=True, env=env)
    release = write_release_from_shared(tmp_path / "release", shared, directions=("en-de", "en-zh"))
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            script,
            command,
            "--tokenizers",
            str(tmp_path / "tok"),
            "--release",
            str(release),
            "--out",
            str(out),
            "--work",
            str(tmp_path / "work"),
            "--device",
            "cpu",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.slow
@pytest.mark.gpu
def test_the_gpu_benchmark_runs_every_metric_path_on_the_cpu(tmp_path, shared_data):
    out = run_bench(tmp_path, shared_data, "run", "--limit", "2")
    figures = json.loads((out / "gpu_figures.json").read_text())
    assert set(figures["metrics"]) == {"COMET-22", "BERTScore", "OmniScore", "BLEURT-20", "MetricX-24", "xCOMET-XL"}
    for metric, row in figures["metrics"].items():
        assert "error" not in row and not any(k.startswith("error") for k in row), (metric, row)
        assert row["triplets"] == 4 and row["seg_per_s"] > 0, (metric, row)
    comet = figures["metrics"]["COMET-22"]
    # comet-score and the scoring path (float16 both) on the same 4 triplets, and the other dtypes beside them
    assert comet["cli_seg_per_s"] > 0 and comet["ratio"] > 0
    assert (
        comet["max_abs_diff"] < 1e-3 and comet["max_abs_diff_float32"] < 1e-3 and comet["max_abs_diff_bfloat16"] < 1e-2
    )
    assert comet["ratio_encode_once"] > 0 and comet["max_abs_diff_encode_once"] < 1e-3
    # xCOMET against comet-score too; it reads the triplet as one input, so no encode_once run
    xcomet = figures["metrics"]["xCOMET-XL"]
    assert xcomet["cli_seg_per_s"] > 0 and xcomet["ratio"] > 0 and xcomet["max_abs_diff"] < 1e-3
    assert "ratio_encode_once" not in xcomet and "error_encode_once" not in xcomet
    assert (out / "logs.tar.gz").is_file()


@pytest.mark.slow
@pytest.mark.gpu
def test_the_batch_size_sweep_runs_each_size_on_the_cpu(tmp_path, shared_data):
    out = run_bench(
        tmp_path,
        shared_data,
        "sweep",
        "--limit",
        "3",
        "--batch-sizes",
        "2,4",
        "--dtype",
        "float16",
        "--option",
        "encode_once=true",
    )
    sweep = json.loads((out / "batch_sweep.json").read_text())
    assert sweep["metric"] == "COMET-22" and sweep["triplets"] == 6 and sweep["options"] == ["encode_once=true"]
    assert [r["batch_size"] for r in sweep["runs"]] == [2, 4]
    for run in sweep["runs"]:
        assert run["rc"] == 0 and run["seg_per_s"] > 0 and run["steady_seg_per_s"] > 0, run
    # each run scored at its own batch size, with the option and dtype asked for: the signatures record them
    import pyarrow.parquet as pq

    for size in (2, 4):
        part = next((tmp_path / "work" / f"scores-COMET-22-{size}" / "parts" / "comet-22").glob("*.parquet"))
        signature = json.loads(pq.read_schema(part).metadata[b"xqmeval.scoring"])["signature"]
        assert signature["batch_size"] == size and signature["dtype"] == "float16"
        assert "encode_once" in signature["sentence_embeddings"]
