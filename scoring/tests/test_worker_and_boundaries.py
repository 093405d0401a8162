"""The worker task run in-process (no broker), its resource check, Hub ids offline, and the package's
promise never to import Django."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scoring.queues import ANY_QUEUE, GPU_QUEUE, queue_for
from scoring.registry import MetricError, all_metrics
from scoring.release import open_release
from scoring.runner import part_path

PACKAGE = Path(__file__).resolve().parents[1]


def test_package_never_imports_django():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*(from|import)\s+django\b", line):
                offenders.append(f"{path.relative_to(PACKAGE)}:{i}")
    assert not offenders


def test_routing_by_resource():
    assert queue_for("chrF++") == queue_for("spBLEU") == queue_for("SBERT") == ANY_QUEUE
    assert {queue_for(m.name) for m in all_metrics() if m.family in ("regression", "QE") and m.name != "SBERT"} == {GPU_QUEUE}


def test_worker_task_scores_and_reports_the_part(release, tmp_path, monkeypatch):
    from scoring.worker import score_direction_task

    out = tmp_path / "out"
    result = score_direction_task.apply(kwargs={"release_dir": str(release), "metric": "chrF++", "direction": "en-zh", "out_dir": str(out)}).get()
    assert result["output_path"] == str(part_path(out, "chrF++", "en-zh"))
    assert result["summary"]["n"] == 48 and not result["summary"]["skipped"]
    again = score_direction_task.apply(kwargs={"release_dir": str(release), "metric": "chrF++", "direction": "en-zh", "out_dir": str(out)}).get()
    assert again["summary"]["skipped"]
    assert json.loads((out / "summary.json").read_text())["metrics"]["chrF++"]["directions"]["en-zh"]["n"] == 48


def test_workers_write_the_whole_metric_file_once_every_direction_has_its_part(release, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scoring.runner import _write_parts
    from scoring.worker import score_direction_task

    out = tmp_path / "out"
    directions = open_release(release).directions()
    assert len(directions) > 1
    for i, direction in enumerate(directions):
        score_direction_task.apply(kwargs={"release_dir": str(release), "metric": "chrF++", "direction": direction, "out_dir": str(out)}).get()
        summary = json.loads((out / "summary.json").read_text())["metrics"]["chrF++"]["directions"]
        assert sorted(summary) == sorted(directions[: i + 1])  # the summary follows every part
        # the whole-metric file waits for the last direction instead of being rewritten after each one
        assert (out / "chrfpp.parquet").exists() == (i == len(directions) - 1)
    parts = [part_path(out, "chrF++", d) for d in sorted(directions)]
    whole = pq.read_table(out / "chrfpp.parquet")
    expected = pa.concat_tables([pq.read_table(p).replace_schema_metadata(None) for p in parts], promote_options="default")
    assert whole.replace_schema_metadata(None).to_pylist() == expected.to_pylist()
    assert json.loads(whole.schema.metadata[b"xqmeval.scoring"])["directions"].keys() == set(directions)

    # parts whose extras differ: columns united, absent values null, as concat_tables(promote) gives
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"score": [0.5, 0.25], "note": ["x", None]}), a)
    pq.write_table(pa.table({"score": [1.0], "tokens": [3]}), b)
    _write_parts(tmp_path / "ab.parquet", [a, b], {"metric": "m"})
    assert pq.read_table(tmp_path / "ab.parquet").to_pylist() == [
        {"score": 0.5, "note": "x", "tokens": None}, {"score": 0.25, "note": None, "tokens": None}, {"score": 1.0, "note": None, "tokens": 3},
    ]


def test_worker_without_gpu_refuses_gpu_metrics(release, tmp_path, monkeypatch):
    import scoring.worker as worker

    monkeypatch.delenv(worker.ALLOW_CPU_ENV, raising=False)
    monkeypatch.setattr(worker, "_has_gpu", lambda: False)
    res = worker.score_direction_task.apply(kwargs={"release_dir": str(release), "metric": "COMET-22", "direction": "en-de"})
    with pytest.raises(MetricError, match="needs a GPU"):
        res.get()
    assert not (release / "scores" / "comet-22.parquet").exists()


def test_hub_dataset_id_offline_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MetricError, match="cannot fetch dataset 'someone/xq-release'.*pass the directory"):
        open_release("someone/xq-release")
    with pytest.raises(MetricError, match="not a release directory"):
        open_release(str(tmp_path / "missing" / "dir"))
