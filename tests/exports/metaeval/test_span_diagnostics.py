"""Span diagnostics: a metric's predicted error spans against the injected ones, character by character.

The pure figures are checked against cases worked out by hand here; the end-to-end test scores a small release
with GEMBA-MQM against the scoring package's stub judge (whose marking rule its docstring states: a source word
left in the translation is marked; a translation over 1.6 x the source's length has its last 20 characters marked
as an addition), so the expected character sets are derived in this file from that rule and the texts."""

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.urls import reverse

from core.models import Direction
from exports.metaeval import diagnostics
from exports.metaeval.diagnostics import (
    SpanTranslation,
    character_spans,
    span_agreement,
    span_counts,
)
from exports.metaeval.selectors import release_diagnostics
from exports.models import MetricScore, Release, ScoringJob
from exports.scores import services
from exports.scores.domain import ScoringError
from scoring.runner import META_KEY, part_path

# ---- the pure figures, against hand-worked cases ---------------------------------------------------------


def test_overlapping_spans_count_each_character_once():
    # predicted [0, 5) ∪ [3, 8) = characters 0..7 (8); injected [4, 10) = 4..9 (6); both: 4..7 (4)
    assert span_counts([(0, 5), (3, 8)], [(4, 10)]) == (4, 8, 6)
    [row, total] = span_agreement([SpanTranslation(1, ["Addition"], [(0, 5), (3, 8)], [(4, 10)])])
    assert row["error_type"] == "Addition" and row["n"] == 1
    assert row["precision"] == pytest.approx(4 / 8) and row["recall"] == pytest.approx(4 / 6)
    p, r = 4 / 8, 4 / 6
    assert row["f1"] == pytest.approx(2 * p * r / (p + r))
    assert total["error_type"] == diagnostics.ALL_TRANSLATIONS and total["f1"] == row["f1"]


def test_empty_predictions_and_empty_gold():
    # nothing predicted: precision undefined, recall and F1 zero
    [row, _] = span_agreement([SpanTranslation(1, ["Omission"], [], [(2, 6)])])
    assert (row["precision"], row["recall"], row["f1"]) == (None, 0.0, 0.0)
    # a span marked on the reference (nothing injected): precision and F1 zero, recall undefined
    [total] = span_agreement([SpanTranslation(0, [], [(0, 3)], [])])
    assert (total["precision"], total["recall"], total["f1"]) == (0.0, None, 0.0)
    [total] = span_agreement([SpanTranslation(0, [], [], [])])
    assert (total["precision"], total["recall"], total["f1"], total["n"]) == (None, None, None, 1)
    assert span_agreement([]) == []


def test_micro_average_per_type_and_over_all_translations():
    rows = span_agreement(
        [
            SpanTranslation(1, ["Addition"], [(0, 4)], [(0, 2)]),  # both 2, predicted 4, injected 2
            SpanTranslation(1, ["Addition"], [(10, 12)], [(10, 16)]),  # both 2, predicted 2, injected 6
            SpanTranslation(1, ["Untranslated"], [(5, 9)], [(5, 9)]),  # exact
            SpanTranslation(2, ["Addition", "Untranslated"], [(0, 1)], [(0, 1), (3, 4)]),  # k = 2: the total only
            SpanTranslation(0, [], [(7, 9)], []),  # a false alarm on a reference
        ]
    )
    by_type = {r["error_type"]: r for r in rows}
    assert set(by_type) == {"Addition", "Untranslated", diagnostics.ALL_TRANSLATIONS}
    add = by_type["Addition"]
    assert (add["n"], add["overlap_chars"], add["predicted_chars"], add["injected_chars"]) == (2, 4, 6, 8)
    assert add["precision"] == pytest.approx(4 / 6) and add["recall"] == pytest.approx(4 / 8)
    assert add["f1"] == pytest.approx(2 * 4 / 14)
    assert by_type["Untranslated"]["f1"] == 1.0
    total = by_type[diagnostics.ALL_TRANSLATIONS]
    # both 2 + 2 + 4 + 1 + 0 = 9; predicted 4 + 2 + 4 + 1 + 2 = 13; injected 2 + 6 + 4 + 2 + 0 = 14
    assert (total["n"], total["overlap_chars"], total["predicted_chars"], total["injected_chars"]) == (5, 9, 13, 14)


def test_build_spans_in_tokens_and_characters_become_character_offsets():
    mt = "Das  Haus ist rot"  # tokens at 0-3, 5-9, 10-13, 14-17 (two spaces after Das)
    assert character_spans(mt, "token", [(1, 3)]) == [(5, 13)]
    assert character_spans(mt, "token", [(3, 9)]) == [(14, 17)]  # past the last token: cut at the end
    assert character_spans(mt, "token", [(2, 2)]) == []  # an omission leaves no characters
    assert character_spans("今天下雨了", "char", [(2, 4), (3, 3)]) == [(2, 4)]


# ---- part files: the spans are kept through ingest --------------------------------------------------------


def _release(tmp_path: Path, rows: list[dict]) -> Path:
    root = tmp_path / "rel"
    (root / "en-de").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "en-de" / "test.parquet")
    (root / "manifest.json").write_text(json.dumps({"version": "spans-1", "counts": {"en-de": len(rows)}}))
    return root


SRC = "The committee approved the new budget after a long debate."
REF = "Der Ausschuss genehmigte den neuen Haushalt nach einer langen Debatte."
ADDED = "und die Katze schlief den ganzen Tag auf dem Sofa"
UNTRANSLATED = REF.replace("Haushalt", "budget")


def _row(tid: str, mt: str, edits: list[tuple[str, str, int, int]]) -> dict:
    return {
        "triplet_id": tid,
        "direction": "en-de",
        "segment_id": "0",
        "src": SRC,
        "ref": REF,
        "mt": mt,
        "num_errors": len(edits),
        "error_types": [e[1] for e in edits],
        "unit": "token",
        "spans": [
            {"candidate": c, "error_type": t, "ref_start": a, "ref_end": b, "mt_start": a, "mt_end": b}
            for c, t, a, b in edits
        ],
    }


ROWS = [
    _row("en-de/0/reference", REF, []),
    _row("en-de/0/u", UNTRANSLATED, [("u", "Untranslated", 5, 6)]),  # token 5: "budget"
    _row("en-de/0/a", REF + " " + ADDED, [("a", "Addition", 10, 20)]),  # tokens 10..19: the added clause
    _row("en-de/0/u+a", UNTRANSLATED + " " + ADDED, [("u", "Untranslated", 5, 6), ("a", "Addition", 10, 20)]),
]


def test_old_part_files_still_ingest_and_bad_spans_are_refused(project, languages, tmp_path):
    release = Release.objects.create(
        project=project, version="s1", status=Release.Status.READY, path=str(_release(tmp_path, ROWS))
    )
    path = part_path(Path(release.path) / "scores", "gemba-mqm", "en-de")
    path.parent.mkdir(parents=True)

    def write(extra: dict):
        cols = {
            "direction": ["en-de"] * 4,
            "triplet_id": [r["triplet_id"] for r in ROWS],
            "score": [0.0, -1.0, -5.0, -6.0],
            **extra,
        }
        meta = {"metric": "gemba-mqm", "signature": {}}
        pq.write_table(pa.table(cols).replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), path)

    write({})  # a part file written before spans were kept
    assert services.part_ingest(release=release, metric="gemba-mqm", direction=languages["en-de"], path=path) == 4
    assert set(MetricScore.objects.filter(release=release).values_list("spans", flat=True)) == {None}
    located = [
        {"span": "budget", "start": 35, "end": 41, "found": True},
        {"span": "x", "start": -1, "end": -1, "found": False},
    ]
    write({"errors": ["[]", json.dumps(located), "[]", "[]"]})
    services.part_ingest(release=release, metric="gemba-mqm", direction=languages["en-de"], path=path)
    stored = dict(MetricScore.objects.filter(release=release).values_list("triplet_id", "spans"))
    assert stored["en-de/0/u"] == [[35, 41]] and stored["en-de/0/reference"] == []  # span not found: no offsets
    for bad, message in (
        ("{", "not JSON"),
        ('[{"start": 5, "end": 2, "found": true}]', "span 1 has start 5 and end 2"),
    ):
        write({"errors": ["[]", bad, "[]", "[]"]})
        with pytest.raises(ScoringError, match=rf"gemba-mqm.*row 2 \(triplet 'en-de/0/u'\): errors: {message}"):
            services.part_ingest(release=release, metric="gemba-mqm", direction=languages["en-de"], path=path)
    assert dict(MetricScore.objects.filter(release=release).values_list("triplet_id", "spans")) == stored  # unchanged


# ---- end to end: GEMBA-MQM against the stub judge, ingested, on the page and in the command ---------------


def _chars(start: int, end: int) -> set[int]:
    return set(range(start, end))


def test_gemba_mqm_spans_from_the_stub_judge_reach_the_diagnostics(
    client, project, languages, admin_user, tmp_path, monkeypatch
):
    from exports.scores import selectors as score_selectors
    from scoring.judges.stub import JudgeStubServer
    from scoring.runner import ScoreOptions, score_release

    release = Release.objects.create(
        project=project, version="s2", status=Release.Status.READY, path=str(_release(tmp_path, ROWS))
    )
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with JudgeStubServer() as stub:
        score_release(
            release.path,
            ["gemba-mqm"],
            out=score_selectors.scores_dir(release),
            options=ScoreOptions(judge={"model": "stub-judge", "base_url": stub.base_url, "concurrency": 4}),
        )
    job = ScoringJob.objects.create(release=release, metric="gemba-mqm", direction=Direction.objects.get(code="en-de"))
    assert services.job_ingest(job=job) == 4

    # what the stub marks, by its rule: "budget" (a source word left in); the last 20 characters of a translation
    # over 1.6 x the source's length. What was injected: "budget"; the added clause.
    predicted, injected = {}, {}
    for r in ROWS:
        mt, p, g = r["mt"], set(), set()
        if "budget" in mt:
            i = mt.index("budget")
            p |= _chars(i, i + 6)
            g |= _chars(i, i + 6)
        if len(mt) > 1.6 * len(SRC):
            p |= _chars(len(mt) - 20, len(mt))
        if mt.endswith(ADDED):
            g |= _chars(len(mt) - len(ADDED), len(mt))
        predicted[r["triplet_id"]], injected[r["triplet_id"]] = p, g
    stored = dict(MetricScore.objects.filter(release=release).values_list("triplet_id", "spans"))
    assert {t: set().union(*(_chars(a, b) for a, b in s)) for t, s in stored.items()} == predicted

    def expected(ids):
        both = sum(len(predicted[t] & injected[t]) for t in ids)
        p, g = sum(len(predicted[t]) for t in ids), sum(len(injected[t]) for t in ids)
        return {"precision": both / p if p else None, "recall": both / g if g else None, "f1": 2 * both / (p + g)}

    rows = {
        r["error_type"]: r
        for r in release_diagnostics(release, ["gemba-mqm"], resamples=20)["metrics"]["gemba-mqm"]["en-de"]["spans"]
    }
    for kind, ids in (
        ("Untranslated", ["en-de/0/u"]),
        ("Addition", ["en-de/0/a"]),
        (diagnostics.ALL_TRANSLATIONS, list(predicted)),
    ):
        assert {k: rows[kind][k] for k in ("precision", "recall", "f1")} == pytest.approx(expected(ids))
    assert rows["Untranslated"]["f1"] == 1.0 and rows["Addition"]["recall"] == pytest.approx(20 / len(ADDED))

    client.force_login(admin_user)
    page = client.get(reverse("scores:diagnostics", args=[release.pk]), {"metrics": "gemba-mqm"}).content.decode()
    assert "Error spans: predicted against injected" in page
    assert f"<td>{20 / len(ADDED):.3f}</td>" in page  # the addition's recall
    # the variants beside it: the untranslated word is marked exactly where it was injected, so every one is 1
    assert {name: v["f1"] for name, v in rows["Untranslated"]["variants"].items()} == {
        "exact": 1.0,
        "partial": 1.0,
        "wmt23": 1.0,
        "wmt25": 1.0,
    }
    assert "<th>Exact match F1</th>" in page and '<td data-variant="wmt25">1.000</td>' in page
    out = io.StringIO()
    call_command(
        "metaeval", str(release.pk), "--metrics", "gemba-mqm", "--diagnostics", "--resamples", "20", stdout=out
    )
    assert f"Addition{' ' * 20} n=1     spans: precision 1.000 recall {20 / len(ADDED):.3f}" in out.getvalue()
    variants = "span F1 variants: exact 1.000 partial 1.000 wmt23 1.000 wmt25 1.000"
    assert f"Untranslated{' ' * 16} n=1     {variants}" in out.getvalue()


# ---- xCOMET on the tiny checkpoint scoring/tests builds, in the scoring environment --------------------------

XCOMET_RUN = """
import sys
from pathlib import Path
from scoring.runner import ScoreOptions, score_release
from scoring.tests import tiny_models
model = tiny_models.comet_checkpoint(Path(sys.argv[2]), "xcomet")
score_release(sys.argv[1], ["xCOMET-XL"], out=Path(sys.argv[3]), options=ScoreOptions(model=str(model), device="cpu"))
"""


@pytest.mark.slow
def test_xcomet_spans_on_a_tiny_checkpoint_are_kept_and_measured(project, languages, tmp_path):
    import subprocess

    from exports.scores import selectors as score_selectors
    from tests.conftest import REPO, need

    python = REPO / ".venv-scoring" / "bin" / "python"
    need(python.exists(), f"the scoring virtualenv at {python.parent.parent} (bin/setup-env scoring)")
    release = Release.objects.create(
        project=project, version="s3", status=Release.Status.READY, path=str(_release(tmp_path, ROWS))
    )
    out = score_selectors.scores_dir(release)
    run = subprocess.run(
        [str(python), "-c", XCOMET_RUN, release.path, str(tmp_path / "xcomet"), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=540,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # what the part file says, read here with pyarrow and json: unbabel-comet's character offsets per translation
    table = pq.read_table(part_path(out, "xCOMET-XL", "en-de")).to_pydict()
    marked = {
        t: [(s["start"], s["end"]) for s in json.loads(x)] for t, x in zip(table["triplet_id"], table["error_spans"])
    }
    job = ScoringJob.objects.create(release=release, metric="xCOMET-XL", direction=Direction.objects.get(code="en-de"))
    assert services.job_ingest(job=job) == 4
    stored = dict(MetricScore.objects.filter(release=release, metric="xCOMET-XL").values_list("triplet_id", "spans"))
    assert stored == {t: [list(s) for s in spans] for t, spans in marked.items()}

    mts = {r["triplet_id"]: r["mt"] for r in ROWS}
    injected = {}  # "budget" where it replaced "Haushalt"; the added clause at the end
    for t, mt in mts.items():
        i = mt.find("budget")
        injected[t] = (_chars(i, i + 6) if i >= 0 else set()) | (
            _chars(len(mt) - len(ADDED), len(mt)) if mt.endswith(ADDED) else set()
        )
    predicted = {t: set().union(set(), *(_chars(a, min(b, len(mts[t]))) for a, b in s)) for t, s in marked.items()}
    both = sum(len(predicted[t] & injected[t]) for t in mts)
    p, g = sum(len(v) for v in predicted.values()), sum(len(v) for v in injected.values())
    [total] = [
        r
        for r in release_diagnostics(release, ["xCOMET-XL"], resamples=20)["metrics"]["xCOMET-XL"]["en-de"]["spans"]
        if r["error_type"] == diagnostics.ALL_TRANSLATIONS
    ]
    assert (total["overlap_chars"], total["predicted_chars"], total["injected_chars"]) == (both, p, g)
    assert total["recall"] == pytest.approx(both / g) and total["f1"] == pytest.approx(2 * both / (p + g))
