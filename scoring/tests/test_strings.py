"""String metrics through the package equal sacrebleu called directly; files, signatures, resumption."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from scoring.registry import Family, MetricError, Scorer, Segment, all_metrics, get_metric, parse_metric_list
from scoring.release import open_release
from scoring.runner import META_KEY, ScoreOptions, part_path, score_direction, score_release
from scoring.tests.asserts import every

REPO = Path(__file__).resolve().parents[2]


def _rows(release: Path, direction_code: str) -> list[dict]:
    return pq.read_table(release / direction_code / "test.parquet").to_pylist()


def _scores(out: Path, metric_file: str, direction_code: str) -> dict[str, float]:
    table = pq.read_table(out / metric_file).to_pylist()
    return {r["triplet_id"]: r["score"] for r in table if r["direction"] == direction_code}


def test_chrf_pp_chrf_bleu_ter_equal_sacrebleu(release, tmp_path):
    out = tmp_path / "scores"
    score_release(release, ["chrF++", "chrF", "BLEU", "TER"], out=out)
    for direction, lang in (("en-de", "de"), ("en-zh", "zh")):
        rows = _rows(release, direction)
        direct = {
            "chrfpp.parquet": CHRF(word_order=2),
            "chrf.parquet": CHRF(),
            "bleu.parquet": BLEU(tokenize="zh" if lang == "zh" else "13a", effective_order=True),
            "ter.parquet": TER(asian_support=lang == "zh"),
        }
        for name, metric in direct.items():
            got = _scores(out, name, direction)
            assert len(got) == len(rows)
            for r in rows:
                assert got[r["triplet_id"]] == metric.sentence_score(r["mt"], [r["ref"]]).score, (name, r["triplet_id"])
    # sanity that the data is not degenerate: level 0 is a perfect match, errors lower chrF++
    chrf = pq.read_table(out / "chrfpp.parquet").to_pylist()
    assert every(r["score"] == 100.0 for r in chrf if r["num_errors"] == 0)
    assert min(r["score"] for r in chrf if r["num_errors"] == 5) < 100.0


def test_spbleu_equals_sacrebleu_flores200_with_same_spm_file(release, tmp_path, spm_model, monkeypatch):
    out = tmp_path / "scores"
    score_release(release, ["spBLEU"], out=out, options=ScoreOptions(spm_model=str(spm_model)))
    # sacrebleu's own flores200 tokenizer, reading the same file from its cache directory
    import sacrebleu.tokenizers.tokenizer_spm as tok_mod

    cache = tmp_path / "sacrebleu"
    (cache / "models").mkdir(parents=True)
    shutil.copy(spm_model, cache / "models" / "flores200sacrebleuspm")
    monkeypatch.setattr(tok_mod, "SACREBLEU_DIR", str(cache))
    direct = BLEU(tokenize="flores200", effective_order=True)
    for direction in ("en-de", "en-zh"):
        got = _scores(out, "spbleu.parquet", direction)
        for r in _rows(release, direction):
            assert got[r["triplet_id"]] == direct.sentence_score(r["mt"], [r["ref"]]).score
    meta = json.loads(pq.read_schema(part_path(out, "spBLEU", "en-de")).metadata[META_KEY])
    sig = meta["signature"]
    assert sig["tokenizer"] == "flores200" and sig["library_version"] == sacrebleu.__version__
    assert "tok:flores200" in sig["sacrebleu_signature"] and "eff:yes" in sig["sacrebleu_signature"]
    assert len(sig["spm_model_sha256"]) == 64


def test_spbleu_offline_without_model_names_the_fix(release, tmp_path, monkeypatch):
    import sacrebleu.tokenizers.tokenizer_spm as tok_mod
    import sacrebleu.utils as utils_mod

    monkeypatch.delenv("XQMEVAL_SPM_MODEL", raising=False)
    monkeypatch.setattr(tok_mod, "SACREBLEU_DIR", str(tmp_path / "empty"))
    monkeypatch.setattr(utils_mod, "SACREBLEU_DIR", str(tmp_path / "empty"))

    def no_network(*a, **k):
        raise OSError("network unreachable")

    monkeypatch.setattr(tok_mod, "download_file", no_network)
    with pytest.raises(MetricError, match="--spm-model"):
        score_release(release, ["spBLEU"], out=tmp_path / "s")
    assert not (tmp_path / "s" / "spbleu.parquet").exists()


def test_output_files_signature_summary(release, tmp_path):
    out = tmp_path / "scores"
    score_release(release, ["chrF++"], out=out)
    table = pq.read_table(out / "chrfpp.parquet")
    assert {"direction", "triplet_id", "score", "num_errors", "segment_id"} <= set(table.column_names)
    ids = table.column("triplet_id").to_pylist()
    assert len(ids) == len(set(ids)) == sum(len(_rows(release, d)) for d in ("en-de", "en-zh"))
    # rows keep the release's order within a direction
    assert [i for i in ids if i.startswith("en-de")] == [r["triplet_id"] for r in _rows(release, "en-de")]
    meta = json.loads(table.schema.metadata[META_KEY])
    for key in ("library", "library_version", "model", "model_revision", "tokenizer", "batch_size", "dtype"):
        assert key in meta["signature"]
    assert meta["spec"]["better"] == "higher" and meta["spec"]["family"] == "sequence"
    summary = json.loads((out / "summary.json").read_text())
    de = summary["metrics"]["chrF++"]["directions"]["en-de"]
    assert de["n"] == len(_rows(release, "en-de"))
    by_level = de["mean_by_level"]
    assert by_level["0"] == 100.0 and by_level["5"] < by_level["1"] < 100.0


def test_rerun_skips_finished_work_and_changed_input_is_rescored(release, tmp_path):
    out = tmp_path / "scores"
    first = score_release(release, ["chrF++"], out=out)
    assert not any(r["skipped"] for r in first)
    mtime = part_path(out, "chrF++", "en-de").stat().st_mtime_ns
    again = score_release(release, ["chrF++"], out=out)
    assert every(r["skipped"] for r in again)
    assert part_path(out, "chrF++", "en-de").stat().st_mtime_ns == mtime
    # a changed translation means the old part no longer describes this release
    path = release / "en-de" / "test.parquet"
    rows = pq.read_table(path).to_pylist()
    rows[0]["mt"] = "völlig anderer Satz"
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(rows), path)
    third = {r["direction"]: r for r in score_release(release, ["chrF++"], out=out)}
    assert not third["en-de"]["skipped"] and third["en-zh"]["skipped"]
    assert (
        _scores(out, "chrfpp.parquet", "en-de")[rows[0]["triplet_id"]]
        == CHRF(word_order=2).sentence_score("völlig anderer Satz", [rows[0]["ref"]]).score
    )


def test_interrupted_direction_resumes_from_checkpointed_chunks(release, tmp_path):
    rel = open_release(release)
    out = tmp_path / "scores"
    spec = get_metric("chrF++")
    real = spec.build()
    calls = []

    class Dies(Scorer):
        """The real scorer, killed on the third chunk (as a worker losing its GPU would be)."""

        def signature(self, lang=""):
            return real.signature(lang)

        def score(self, segments):
            calls.append(len(segments))
            if len(calls) == 3:
                raise RuntimeError("worker lost")
            return real.score(segments)

    with pytest.raises(RuntimeError):
        score_direction(rel, spec, "en-de", out, ScoreOptions(chunk_size=5), scorer=Dies())
    assert not part_path(out, "chrF++", "en-de").exists()
    calls.clear()

    class Counting(Dies):
        def score(self, segments):
            calls.append(len(segments))
            return real.score(segments)

    result = score_direction(rel, spec, "en-de", out, ScoreOptions(chunk_size=5), scorer=Counting())
    n = len(rel.load("en-de"))
    assert sum(calls) == n - 10  # the two finished chunks were not scored again
    assert result["n"] == n
    assert not part_path(out, "chrF++", "en-de").with_suffix(".chunks").exists()
    direct = CHRF(word_order=2)
    got = _scores(
        out, "parts/chrfpp/en-de.parquet", "en-de"
    )  # the direction's part (the whole file waits for every direction)
    for r in _rows(release, "en-de"):
        assert got[r["triplet_id"]] == direct.sentence_score(r["mt"], [r["ref"]]).score


def test_each_string_metric_scores_as_its_registry_entry_declares(spm_model):
    """The registry's data (which way is better, the range, reading the reference but not the source) checked
    against each string metric's own scores, rather than restated."""
    specs = [m for m in all_metrics() if m.family == Family.SEQUENCE]
    assert specs
    ref = "The quick brown fox jumps over the lazy dog near the old river bank ."
    damaged = "A slow red cat sat under a busy dog far from the lake ."
    for spec in specs:
        scorer = spec.build(**ScoreOptions(spm_model=str(spm_model)).for_metric())
        same, worse, other_source, other_ref = scorer.score(
            [
                Segment(src="source one", mt=ref, ref=ref, target_lang="en"),
                Segment(src="source one", mt=damaged, ref=ref, target_lang="en"),
                Segment(src="an entirely different source", mt=ref, ref=ref, target_lang="en"),
                Segment(src="source one", mt=ref, ref=damaged, target_lang="en"),
            ]
        ).scores
        assert (same > worse) if spec.higher_is_better else (same < worse), (spec.name, same, worse)
        low, high = spec.score_range
        assert every((low is None or s >= low - 1e-9) and (high is None or s <= high + 1e-9) for s in (same, worse)), (
            spec.name,
            same,
            worse,
        )
        assert (same != other_ref) == spec.needs_reference, spec.name
        assert (same != other_source) == spec.needs_source, spec.name


def test_unknown_metric_in_a_list_is_named():
    with pytest.raises(MetricError, match="unknown metric 'nope'"):
        parse_metric_list("chrf++,nope")


def test_bad_release_is_reported_with_file_and_column(tmp_path):
    import pyarrow as pa

    root = tmp_path / "bad"
    (root / "en-de").mkdir(parents=True)
    pq.write_table(
        pa.table({"triplet_id": ["a", "a"], "src": ["x", "y"], "ref": ["x", "y"], "mt": ["x", "y"]}),
        root / "en-de" / "test.parquet",
    )
    with pytest.raises(MetricError, match=r"en-de/test.parquet: triplet_id 'a' appears more than once"):
        score_release(root, ["chrF"], out=tmp_path / "o")
    pq.write_table(pa.table({"triplet_id": ["a"], "src": ["x"], "ref": ["x"]}), root / "en-de" / "test.parquet")
    with pytest.raises(MetricError, match="missing column"):
        score_release(root, ["chrF"], out=tmp_path / "o")
    assert not (tmp_path / "o" / "chrf.parquet").exists()


def test_cli_run_standalone(release, tmp_path, spm_model):
    out = tmp_path / "cli-out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "scoring",
        "run",
        "--release",
        str(release),
        "--metrics",
        "chrf++,spbleu,bleu,chrf,ter",
        "--out",
        str(out),
        "--spm-model",
        str(spm_model),
        "--quiet",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for name in ("chrfpp", "spbleu", "bleu", "chrf", "ter"):
        assert pq.read_table(out / f"{name}.parquet").num_rows == 2 * 8 * 6  # 8 segments × levels 0–5, two directions
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.stdout.count("(already done)") == 10
    bad = subprocess.run(
        [sys.executable, "-m", "scoring", "run", "--release", str(release), "--metrics", "nope"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "unknown metric 'nope'" in bad.stderr
