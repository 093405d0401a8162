"""Known-answer diagnostics and the two comparison pages (leaderboard, diagnostics) on a release whose files
record each pseudo translation's errors as the build writes them (error types; spans naming the candidate).

The scores follow a rule stated here: each error type costs a metric a known amount, so the expected drops,
detection rates and additivity ratios are known answers, computed in this file from the rule (not by the code
under test)."""

import io
import json
from itertools import combinations
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from scipy import stats

from core.models import Direction
from exports.metaeval import evalset
from exports.metaeval.selectors import release_diagnostics
from exports.models import MetricScore, Release
from exports.scores.services import scores_summarize

pytestmark = pytest.mark.django_db
CODES = ("en-de", "en-zh")
TYPES = ("Addition", "Omission", "Untranslated")
# Per metric: the cost of one error of each type (chrF++ misses an untranslated error entirely: cost 0), and how
# much a 2nd error costs relative to its cost alone (BLEU: half).
COST = {
    "chrF++": {"Addition": 4.0, "Omission": 8.0, "Untranslated": 0.0},
    "BLEU": {"Addition": 2.0, "Omission": 6.0, "Untranslated": 3.0},
}
LATER = {"chrF++": 1.0, "BLEU": 0.5}
SEGMENTS = 6


def translations(code: str):
    """Per segment: the reference, one single-error translation per type, and every pair of them (k = 2)."""
    for s in range(SEGMENTS):
        candidates = [(f"{t}/{code}/{s}", t) for t in TYPES]
        yield f"{code}/{s}/k0", s, []
        for c in candidates:
            yield f"{code}/{s}/{c[0]}", s, [c]
        for pair in combinations(candidates, 2):
            yield f"{code}/{s}/" + "+".join(c for c, _ in pair), s, list(pair)


def score(metric: str, s: int, errors) -> float:
    costs = sorted((COST[metric][t] for _, t in errors), reverse=True)
    return 90.0 - s - sum(cost * (1.0 if i == 0 else LATER[metric]) for i, cost in enumerate(costs))


@pytest.fixture
def release(project, languages, tmp_path):
    root = tmp_path / "release"
    rel = Release.objects.create(project=project, version="3.0.0", status=Release.Status.READY, path=str(root))
    for code in CODES:
        rows = [
            {
                "triplet_id": tid,
                "segment_id": str(s),
                "num_errors": len(errors),
                "src": f"source {s}",
                "ref": f"reference {s}",
                "mt": f"translation of {s} with " + " ".join(c for c, _ in errors),
                "error_types": [t for _, t in errors],
                "spans": [
                    {"candidate": c, "error_type": t, "ref_start": 0, "ref_end": 1, "mt_start": 0, "mt_end": 1}
                    for c, t in errors
                ],
            }
            for tid, s, errors in translations(code)
        ]
        (root / code).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), root / code / "test.parquet")
        direction = Direction.objects.get(code=code)
        for metric in COST:
            MetricScore.objects.bulk_create(
                MetricScore(
                    release=rel,
                    metric=metric,
                    direction=direction,
                    triplet_id=tid,
                    level=len(errors),
                    score=score(metric, s, errors),
                )
                for tid, s, errors in translations(code)
            )
        # TER: lower is better, costs as chrF++'s but as increases
        MetricScore.objects.bulk_create(
            MetricScore(
                release=rel,
                metric="TER",
                direction=direction,
                triplet_id=tid,
                level=len(errors),
                score=100.0 - score("chrF++", s, errors),
            )
            for tid, s, errors in translations(code)
        )
    scores_summarize(release=rel)
    return rel


def test_sensitivity_detection_and_additivity_per_error_type(release):
    result = release_diagnostics(release, ["chrF++", "BLEU", "TER"], resamples=200)
    for metric in ("chrF++", "BLEU", "TER"):
        costs = COST["chrF++" if metric == "TER" else metric]
        later = LATER["chrF++" if metric == "TER" else metric]
        for code in CODES:
            figures = result["metrics"][metric][code]
            rows = {r["error_type"]: r for r in figures["sensitivity"]}
            assert set(rows) == set(TYPES)
            for t in TYPES:
                assert rows[t]["n"] == SEGMENTS
                assert rows[t]["mean_drop"] == pytest.approx(costs[t])
                assert rows[t]["low"] == pytest.approx(costs[t]) == pytest.approx(rows[t]["high"])  # no spread
                assert rows[t]["detection_rate"] == (1.0 if costs[t] > 0 else 0.0)
            [mixed] = figures["additivity"]  # every pair mixes two types
            assert (mixed["error_type"], mixed["k"], mixed["n"]) == ("(mixed types)", 2, 3 * SEGMENTS)
            pairs = [sorted((costs[a], costs[b]), reverse=True) for a, b in combinations(TYPES, 2)]
            actual = sum(hi + later * lo for hi, lo in pairs) / 3
            alone = sum(hi + lo for hi, lo in pairs) / 3
            assert mixed["mean_drop"] == pytest.approx(actual)
            assert mixed["ratio"] == pytest.approx(actual / alone)
    grid = result["heatmap"]["chrF++"]
    assert grid["directions"] == list(CODES) and grid["error_types"] == list(TYPES)
    assert grid["rows"] == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]  # chrF++ never detects Untranslated
    assert result["parameters"] == {
        "tie_threshold": 0.0,
        "resamples": 200,
        "seed": 0,
        "alpha": 0.05,
        "interval": "percentile bootstrap",
    }


def test_a_tie_threshold_counts_small_drops_as_missed(release):
    result = release_diagnostics(release, ["BLEU"], tie_threshold=2.5, resamples=50)
    rates = {r["error_type"]: r["detection_rate"] for r in result["metrics"]["BLEU"]["en-de"]["sensitivity"]}
    assert rates == {"Addition": 0.0, "Omission": 1.0, "Untranslated": 1.0}


def test_release_without_the_build_records_is_a_clear_error(release):
    path = Path(release.path) / "en-de" / "test.parquet"
    table = pq.read_table(path).drop_columns(["error_types"])
    pq.write_table(table, path)
    with pytest.raises(ValueError, match="test.parquet: no column error_types"):
        release_diagnostics(release, ["chrF++"])


def test_pages_linked_from_the_scores_stage(client, release, admin_user, annotator_de):
    client.force_login(admin_user)
    page = client.get(reverse("scores:release", args=[release.pk])).content.decode()
    assert "/leaderboard/?metrics=" in page and "/diagnostics/?metrics=" in page
    board = client.get(reverse("scores:leaderboard", args=[release.pk]), {"metrics": "chrF++,BLEU,TER"})
    text = board.content.decode()
    assert board.status_code == 200 and "All directions" in text and "Cluster" in text
    for name in ("chrF++", "BLEU", "TER"):
        assert f"<bdi>{name}</bdi>" in text
    url = reverse("scores:leaderboard", args=[release.pk])
    spearman = client.get(url, {"metrics": "chrF++,BLEU", "statistic": "spearman"}).content.decode()
    assert "<strong>Spearman ρ</strong>" in spearman
    # pairwise accuracy is O(n²) per resample: the command's, not a page's (the page falls back to Pearson)
    pairwise = client.get(url, {"metrics": "chrF++,BLEU", "statistic": "accuracy"}).content.decode()
    assert "<strong>Pearson r</strong>" in pairwise and "pairwise accuracy" not in pairwise
    diag = client.get(reverse("scores:diagnostics", args=[release.pk]), {"metrics": "chrF++,BLEU"})
    text = diag.content.decode()
    assert diag.status_code == 200 and 'class="heat-0">0.00</td>' in text and "Additivity" in text
    # an annotator of en-de sees en-de only; unknown metrics and bad parameters say why in words (#46.3), never
    # a 404 for the existing release nor a 500; no ?metrics= at all: the metrics scored on the release
    client.force_login(annotator_de)
    text = client.get(reverse("scores:diagnostics", args=[release.pk]), {"metrics": "chrF++"}).content.decode()
    assert "<h3>en-de</h3>" in text and "en-zh" not in text

    def says(name: str, query: dict) -> str:
        response = client.get(reverse(f"scores:{name}", args=[release.pk]), query)
        assert response.status_code == 200
        text = response.content.decode()
        return text[text.index('id="not-yet"') :] if 'id="not-yet"' in text else ""

    assert "no direction where every one of chrF++, nope is scored" in says("leaderboard", {"metrics": "chrF++,nope"})
    assert says("leaderboard", {"metrics": ""}) == "" and says("diagnostics", {}) == ""
    too_many = ",".join(f"m{i}" for i in range(30))
    assert "name at most 20 metrics" in says("diagnostics", {"metrics": too_many})


def test_untrusted_metric_and_type_names_are_escaped(client, release, admin_user):
    client.force_login(admin_user)
    name = "<script>x</script>"
    MetricScore.objects.filter(release=release, metric="BLEU").update(metric=name)
    scores_summarize(release=release)
    text = client.get(reverse("scores:diagnostics", args=[release.pk]), {"metrics": name}).content.decode()
    assert name not in text and "&lt;script&gt;x&lt;/script&gt;" in text


def test_each_heatmap_has_a_title(client, release, admin_user):
    """Each metric's heatmap table is named by its caption (what a screen reader announces)."""
    client.force_login(admin_user)
    text = client.get(reverse("scores:diagnostics", args=[release.pk]), {"metrics": "chrF++"}).content.decode()
    assert "Detection rate of <bdi>chrF++</bdi> per error type and direction</caption>" in text


def test_diagnostics_command_prints_the_known_answers(release):
    out = io.StringIO()
    call_command(
        "metaeval",
        str(release.pk),
        "--metrics",
        "chrF++",
        "--diagnostics",
        "--format",
        "json",
        "--resamples",
        "50",
        stdout=out,
        verbosity=0,
    )
    rows = json.loads(out.getvalue())["metrics"]["chrF++"]["en-zh"]["sensitivity"]
    assert {r["error_type"]: r["mean_drop"] for r in rows} == pytest.approx(COST["chrF++"])


def test_export_evalset_round_trip_and_import_command(release, tmp_path):
    out = io.StringIO()
    call_command(
        "metaeval",
        str(release.pk),
        "--metrics",
        "chrF++,BLEU,TER",
        "--export-evalset",
        str(tmp_path),
        stdout=out,
        verbosity=0,
    )
    name = f"{release.project.name}-{release.version}"
    evs = evalset.read(str(tmp_path), name, "en-de")
    ids = [tid for tid, _, _ in translations("en-de")]
    assert evs.outputs["triplets"][1] == "translation of 0 with Addition/en-de/0"
    assert evs.human[("xqm", "seg")]["triplets"] == [-5.0 * len(e) for _, _, e in translations("en-de")]
    assert evs.metrics[("BLEU-refA", "seg")]["triplets"] == [score("BLEU", s, e) for _, s, e in translations("en-de")]
    assert len(ids) == len(evs.sources)
    out = io.StringIO()
    call_command(
        "metaeval",
        "--import-evalset",
        str(tmp_path),
        "--evalset",
        name,
        "--lp",
        "en-de",
        "--level",
        "seg",
        "--resamples",
        "100",
        "--format",
        "json",
        stdout=out,
        verbosity=0,
    )
    result = json.loads(out.getvalue())
    human = [-5.0 * len(e) for _, _, e in translations("en-de")]
    expected = {
        f"{m}-refA": stats.pearsonr(human, [score(m, s, e) for _, s, e in translations("en-de")]).statistic
        for m in ("chrF++", "BLEU")
    }
    values = {r["metric"]: r["value"] for r in result["ranking"]}
    assert {m: values[m] for m in expected} == pytest.approx(expected, abs=1e-12)
    assert values["TER-refA"] == pytest.approx(-expected["chrF++-refA"], abs=1e-12)  # exported as scored: raw TER
    assert result["n"] == len(ids) and result["parameters"]["resamples"] == 100


def test_import_command_on_the_reference_evalset_equals_mt_metrics_eval():
    root = Path(__file__).resolve().parents[2] / "fixtures" / "mtme"
    expected = json.loads((root / "expected.json").read_text())
    out = io.StringIO()
    call_command(
        "metaeval",
        "--import-evalset",
        str(root),
        "--evalset",
        expected["evalset"],
        "--lp",
        expected["lp"],
        "--format",
        "json",
        "--resamples",
        "20",
        stdout=out,
        verbosity=0,
    )
    values = {r["metric"]: r["value"] for r in json.loads(out.getvalue())["ranking"]}
    assert values == pytest.approx({m: v["pearson"] for m, v in expected["system"].items()}, abs=1e-12)
    with pytest.raises(CommandError, match="no 'mqm' human scores at sys level \\(there are: xqm\\)"):
        call_command(
            "metaeval",
            "--import-evalset",
            str(root),
            "--evalset",
            expected["evalset"],
            "--lp",
            "en-de",
            "--gold",
            "mqm",
            verbosity=0,
        )


# A release built from labelled candidates, as the build names them ("<error type>.<position>", "#<id>" when two
# runs made the same pair): an MQM omission (head) and a perturbation omission (no position) share the type's
# name; category and severity tell them apart. The severities are SPEC's: MQM errors major, AskQE's Spelling
# minor and its Omission critical.
LABELLED = {
    "Omission.head": ("Omission", "mqm", "major", 7.0),
    "Addition.end#7": ("Addition", "mqm", "major", 3.0),
    "Omission.none": ("Omission", "perturbation", "critical", 5.0),
    "Spelling.none": ("Spelling", "perturbation", "minor", 1.0),
}


@pytest.fixture
def labelled_release(project, languages, tmp_path):
    root = tmp_path / "labelled"
    rel = Release.objects.create(project=project, version="3.1.0", status=Release.Status.READY, path=str(root))
    rows, scores = [], []
    for s in range(SEGMENTS):
        for label in ["", *LABELLED]:
            error_type = LABELLED[label][0] if label else None
            errors = [(label, error_type)] if label else []
            tid = f"en-de/{s}/{label or 'k0'}"
            # each segment's drops spread by s/10 around the label's cost, so the mean is the cost
            drop = LABELLED[label][3] + (s - (SEGMENTS - 1) / 2) / 10 if label else 0.0
            rows.append(
                {
                    "triplet_id": tid,
                    "segment_id": str(s),
                    "num_errors": len(errors),
                    "error_types": [t for _, t in errors],
                    "spans": [
                        {"candidate": c, "error_type": t, "ref_start": 0, "ref_end": 1, "mt_start": 0, "mt_end": 1}
                        for c, t in errors
                    ],
                }
            )
            scores.append((tid, len(errors), 80.0 - drop))
    (root / "en-de").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "en-de" / "test.parquet")
    direction = Direction.objects.get(code="en-de")
    MetricScore.objects.bulk_create(
        MetricScore(release=rel, metric="chrF++", direction=direction, triplet_id=t, level=k, score=v)
        for t, k, v in scores
    )
    scores_summarize(release=rel)
    return rel


def test_sensitivity_splits_by_category_and_severity(labelled_release, client, admin_user):
    result = release_diagnostics(labelled_release, ["chrF++"], resamples=100)
    rows = result["metrics"]["chrF++"]["en-de"]["sensitivity"]
    got = {(r["error_type"], r["category"], r["severity"]): (r["n"], r["mean_drop"]) for r in rows}
    expected = {(t, c, sev): (SEGMENTS, pytest.approx(cost)) for t, c, sev, cost in LABELLED.values()}
    assert got == expected
    # a threshold of 2 misses the minor spelling perturbation's drops (1 ± 0.25) and catches the others
    rates = release_diagnostics(labelled_release, ["chrF++"], tie_threshold=2.0, resamples=10)
    rates = {
        (r["error_type"], r["category"]): r["detection_rate"]
        for r in rates["metrics"]["chrF++"]["en-de"]["sensitivity"]
    }
    assert rates == {
        ("Addition", "mqm"): 1.0,
        ("Omission", "mqm"): 1.0,
        ("Omission", "perturbation"): 1.0,
        ("Spelling", "perturbation"): 0.0,
    }
    grid = result["heatmap"]["chrF++"]
    assert grid["error_types"] == [
        "Addition",
        "Omission",
        "Omission (perturbation, critical)",
        "Spelling (perturbation, minor)",
    ]

    out = io.StringIO()
    call_command(
        "metaeval",
        str(labelled_release.pk),
        "--metrics",
        "chrF++",
        "--diagnostics",
        "--resamples",
        "20",
        stdout=out,
        verbosity=0,
    )
    lines = [line.split() for line in out.getvalue().splitlines() if line.startswith("  en-de Omission ")]
    assert sorted((parts[2], parts[3]) for parts in lines if parts[3].startswith("n=")) == [
        ("mqm/major", "n=6"),
        ("perturbation/critical", "n=6"),
    ]

    client.force_login(admin_user)
    page = client.get(reverse("scores:diagnostics", args=[labelled_release.pk]), {"metrics": "chrF++"})
    text = page.content.decode()
    assert page.status_code == 200 and "<th>Category</th><th>Severity</th>" in text
    assert "<td><bdi>Spelling</bdi></td><td>perturbation</td><td>minor</td><td>6</td>" in text
    assert "<td><bdi>Omission</bdi></td><td>mqm</td><td>major</td><td>6</td>" in text
