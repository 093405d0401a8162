"""The diagnostics and the leaderboard on the shared XQ-MEval data, end to end: imported, built and released by
the platform (German and Chinese), scored with chrF++, BLEU and TER by the scoring package (``python -m scoring``
in .venv-scoring), ingested, then read on the pages.

The reference for chrF++'s known-answer figures is sacrebleu, run in .venv-scoring apart from the platform
(``REFERENCE`` below): it scores each pseudo translation against its reference itself and derives the drops,
detection rates and additivity from the release file's spans."""

from __future__ import annotations

import json
import subprocess

import pytest
from django.urls import reverse

from core.models import Direction, Project
from exports.benchmark.services import build_run
from exports.metaeval.selectors import release_diagnostics, release_leaderboard
from exports.release import services as release_services
from exports.scores.services import part_ingest
from scoring.runner import part_path
from tests.conftest import REPO, need
from tests.exports.conftest import import_languages
from tests.support.asserts import every

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db]
SCORING_PYTHON = REPO / ".venv-scoring" / "bin" / "python"
CODES = ("en-de", "en-zh")

REFERENCE = r"""
import json, sys
from collections import defaultdict
import pyarrow.parquet as pq
from sacrebleu.metrics import CHRF

chrf = CHRF(word_order=2)
out = {}
for code in sys.argv[2:]:
    rows = pq.read_table(f"{sys.argv[1]}/{code}/test.parquet").to_pylist()
    by_segment = defaultdict(list)
    for r in rows:
        r["chrf"] = chrf.sentence_score(r["mt"], [r["ref"]]).score
        by_segment[r["segment_id"]].append(r)
    drops, pairs = defaultdict(list), defaultdict(list)
    for members in by_segment.values():
        ref = [r for r in members if r["num_errors"] == 0][0]["chrf"]
        alone = {}
        for r in members:
            if r["num_errors"] == 1:
                drops[r["error_types"][0]].append(ref - r["chrf"])
                alone[r["spans"][0]["candidate"]] = ref - r["chrf"]
        for r in members:
            candidates = [s["candidate"] for s in r["spans"]]
            if r["num_errors"] >= 2 and len(candidates) == r["num_errors"] and all(c in alone for c in candidates):
                kind = r["error_types"][0] if len(set(r["error_types"])) == 1 else "(mixed types)"
                pairs[f"{kind}|{r['num_errors']}"].append((ref - r["chrf"], sum(alone[c] for c in candidates)))
    out[code] = {
        "sensitivity": {t: [sum(v) / len(v), sum(d > 0 for d in v) / len(v), len(v)] for t, v in drops.items()},
        "additivity": {k: [sum(a for a, _ in v) / len(v), sum(p for _, p in v) / len(v), len(v)] for k, v in pairs.items()},
    }
print(json.dumps(out))
"""


@pytest.fixture
def scored_release(shared_data, tmp_path):
    need(SCORING_PYTHON.exists(), "the scoring virtualenv .venv-scoring")
    import_languages("xqm", shared_data, ["de", "zh"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": {"monolingual_repetitions": 2, "multilingual_repetitions": 2}}
    project.save()
    build_run(project=project)
    release = release_services.release_create(project=project, version="1.0.0", out_dir=tmp_path / "rel")
    out = tmp_path / "scores"
    subprocess.run(
        [
            str(SCORING_PYTHON),
            "-m",
            "scoring",
            "run",
            "--release",
            release.path,
            "--metrics",
            "chrF++,BLEU,TER",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=900,
        cwd=REPO,
    )
    for metric in ("chrF++", "BLEU", "TER"):
        for code in CODES:
            part_ingest(
                release=release,
                metric=metric,
                direction=Direction.objects.get(code=code),
                path=part_path(out, metric, code),
            )
    return release


def test_chrf_and_bleu_diagnostics_and_leaderboard_on_the_shared_release(scored_release, client, admin_user):
    reference = json.loads(
        subprocess.run(
            [str(SCORING_PYTHON), "-c", REFERENCE, scored_release.path, *CODES],
            check=True,
            capture_output=True,
            text=True,
            timeout=600,
        ).stdout
    )
    result = release_diagnostics(scored_release, ["chrF++", "BLEU"], resamples=200)
    for code in CODES:
        rows = {r["error_type"]: r for r in result["metrics"]["chrF++"][code]["sensitivity"]}
        expected = reference[code]["sensitivity"]
        assert set(rows) == set(expected) and len(rows) >= 4  # the shared data's four error types
        for error_type, (mean, rate, n) in expected.items():
            row = rows[error_type]
            assert (row["n"], row["detection_rate"]) == (n, pytest.approx(rate))
            assert row["mean_drop"] == pytest.approx(mean, abs=1e-9) and row["low"] <= mean <= row["high"]
        additivity = {f"{r['error_type']}|{r['k']}": r for r in result["metrics"]["chrF++"][code]["additivity"]}
        assert additivity and set(additivity) == set(reference[code]["additivity"])
        for key, (actual, alone, n) in reference[code]["additivity"].items():
            row = additivity[key]
            assert row["n"] == n and row["mean_drop"] == pytest.approx(actual, abs=1e-9)
            assert row["mean_sum_of_single_drops"] == pytest.approx(alone, abs=1e-9)
        assert result["metrics"]["BLEU"][code]["sensitivity"]  # BLEU: its own per-type table
    for metric in ("chrF++", "BLEU"):
        grid = result["heatmap"][metric]
        assert grid["directions"] == list(CODES) and len(grid["error_types"]) >= 4

    board = release_leaderboard(scored_release, ["chrF++", "BLEU", "TER"], resamples=200)
    assert sorted(r["metric"] for r in board["overall"]["ranking"]) == ["BLEU", "TER", "chrF++"]
    assert every(r["cluster"] >= 1 for g in board["directions"] for r in g["ranking"])

    client.force_login(admin_user)
    page = client.get(reverse("scores:diagnostics", args=[scored_release.pk]), {"metrics": "chrF++,BLEU"})
    text = page.content.decode()
    caption = "<caption>Sensitivity per error type, category and severity (k = 1)</caption>"
    assert page.status_code == 200 and text.count(caption) == 4
    assert "Detection rate per error type and direction" in text and "<caption>Additivity</caption>" in text
    page = client.get(reverse("scores:leaderboard", args=[scored_release.pk]), {"metrics": "chrF++,BLEU,TER"})
    assert page.status_code == 200 and "All directions" in page.content.decode()
