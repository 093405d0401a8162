"""The leaderboard of a scored release (``manage.py metaeval --leaderboard``): chrF++, BLEU and TER ranked with
significance clusters per direction and over all. Values against scipy on the oriented scores; the permutation
test itself is compared with mt-metrics-eval in tests/exports/metaeval/test_metaeval_reference.py."""

import csv
import io
import itertools
import json

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy import stats

from core.models import Direction
from exports.metaeval.selectors import release_leaderboard
from exports.models import MetricScore, PseudoSystem, Release
from exports.scores.services import scores_summarize

pytestmark = pytest.mark.django_db
CODES = ("en-de", "en-zh")


def scores_of(code: str) -> dict[str, list[float]]:
    """Per metric, the scores of 60 triplets (k = i % 6): chrF++ follows the quality closely, BLEU loosely, TER
    (lower is better) hardly at all."""
    rng = np.random.default_rng(len(code) + ord(code[-1]))
    k = np.arange(60) % 6
    return {
        "chrF++": list(80 - 8 * k + rng.normal(0, 1, 60)),
        "BLEU": list(40 - 2 * k + rng.normal(0, 6, 60)),
        "TER": list(50 + 0.5 * k + rng.normal(0, 8, 60)),
    }


@pytest.fixture
def scored(project, languages):
    release = Release.objects.create(project=project, version="2.0.0", status=Release.Status.READY)
    for code in CODES:
        direction = Direction.objects.get(code=code)
        for metric, values in scores_of(code).items():
            MetricScore.objects.bulk_create(
                MetricScore(
                    release=release,
                    metric=metric,
                    direction=direction,
                    triplet_id=f"{code}/{i}/k{i % 6}",
                    level=i % 6,
                    score=float(v),
                )
                for i, v in enumerate(values)
            )
        for repetition in range(2):  # 6 monolingual systems per repetition, one per level, 5 triplets each
            for k in range(6):
                ids = [f"{code}/{i}/k{k}" for i in range(60) if i % 6 == k][repetition * 5 : (repetition + 1) * 5]
                PseudoSystem.objects.create(
                    release=release,
                    project=project,
                    kind="monolingual",
                    direction=direction,
                    name=f"mono/{code}/k{k}/r{repetition}",
                    level=k,
                    repetition=repetition,
                    seed=repetition,
                    human_score=-5.0 * k,
                    triplet_ids=ids,
                )
    scores_summarize(release=release)
    return release


def expected_pearson(code: str) -> dict[str, float]:
    human = [-5.0 * (i % 6) for i in range(60)]
    signs = {"chrF++": 1.0, "BLEU": 1.0, "TER": -1.0}
    return {m: stats.pearsonr(human, [signs[m] * v for v in values]).statistic for m, values in scores_of(code).items()}


def test_leaderboard_ranks_chrf_bleu_ter_with_clusters_per_direction_and_over_all(scored):
    board = release_leaderboard(scored, ["TER", "BLEU", "chrF++"], resamples=200, seed=3)
    assert [row["direction"] for row in board["directions"]] == list(CODES)
    for row in board["directions"]:
        expected = expected_pearson(row["direction"])
        ranking = row["ranking"]
        order = sorted(expected, key=lambda m: -expected[m])
        assert [r["metric"] for r in ranking] == order == ["chrF++", "BLEU", "TER"]
        assert [r["value"] for r in ranking] == pytest.approx([expected[r["metric"]] for r in ranking], abs=1e-12)
        assert [r["cluster"] for r in ranking] == [1, 2, 3]  # far apart: every difference significant
        for r in ranking:  # the interval over the same resamples as mt-metrics-eval's Pearson (tests/unit)
            assert r["low"] < r["value"] < r["high"]
        assert row["n"] == 60 and row["parameters"] == {
            "resamples": 200,
            "seed": 3,
            "block_size": 1000,
            "early_min": 0.02,
            "early_max": 0.5,
            "alpha": 0.05,
            "perm_test": "scores",
            "average_by": "none",
            "replace_nans_with_zeros": False,
        }
    overall = board["overall"]
    means = {m: np.mean([expected_pearson(c)[m] for c in CODES]) for m in ("chrF++", "BLEU", "TER")}
    assert {r["metric"]: r["value"] for r in overall["ranking"]} == pytest.approx(means, abs=1e-12)
    assert overall["n"] == 120 and [r["cluster"] for r in overall["ranking"]] == [1, 2, 3]


def test_command_writes_json_csv_text_and_latex(scored):
    def run(*extra):
        out = io.StringIO()
        call_command(
            "metaeval",
            str(scored.pk),
            "--metrics",
            "chrF++,BLEU,TER",
            "--leaderboard",
            "--resamples",
            "100",
            *extra,
            stdout=out,
            verbosity=0,
        )
        return out.getvalue()

    board = json.loads(run("--format", "json"))
    assert board["overall"]["ranking"][0]["metric"] == "chrF++" and board["parameters"]["resamples"] == 100
    rows = list(csv.DictReader(io.StringIO(run("--format", "csv"))))
    assert len(rows) == 9 and {r["direction"] for r in rows} == {"en-de", "en-zh", "all"}
    assert [r["cluster"] for r in rows if r["direction"] == "all"] == ["1", "2", "3"]
    text = run()
    assert "chrF++" in text and "100 permutation resamples (scores test), seed 0" in text
    latex = run("--latex")
    assert "\\begin{tabular}{lrrr}" in latex and "en-de & en-zh & all" in latex and "$^{1}$" in latex


def test_command_errors_are_clear(scored):
    with pytest.raises(CommandError, match="at least two distinct metrics"):
        call_command("metaeval", str(scored.pk), "--metrics", "chrF++", "--leaderboard", verbosity=0)
    with pytest.raises(CommandError, match="no direction where every one of chrF\\+\\+, COMET is scored"):
        call_command("metaeval", str(scored.pk), "--metrics", "chrF++,COMET", "--leaderboard", verbosity=0)
    with pytest.raises(CommandError, match="--resamples"):
        call_command(
            "metaeval", str(scored.pk), "--metrics", "chrF++,BLEU", "--leaderboard", "--resamples", "0", verbosity=0
        )
    with pytest.raises(CommandError, match="for --leaderboard"):
        call_command("metaeval", str(scored.pk), "--metrics", "chrF++", "--format", "csv", verbosity=0)


def test_system_level_pooled_accuracy_over_repetitions_and_directions(scored):
    board = release_leaderboard(
        scored, ["chrF++", "BLEU", "TER"], statistic="accuracy", level="system", resamples=100, seed=5
    )
    signs = {"chrF++": 1.0, "BLEU": 1.0, "TER": -1.0}
    agree, pairs = {m: 0 for m in signs}, 0
    for code in CODES:
        values = scores_of(code)
        for repetition in range(2):
            members = [[i for i in range(60) if i % 6 == k][repetition * 5 : (repetition + 1) * 5] for k in range(6)]
            human = [-5.0 * k for k in range(6)]
            for m, sign in signs.items():
                means = [sign * np.mean([values[m][i] for i in ids]) for ids in members]
                agree[m] += sum(
                    np.sign(human[a] - human[b]) == np.sign(means[a] - means[b])
                    for a, b in itertools.combinations(range(6), 2)
                )
            pairs += 15
    overall = {r["metric"]: r["value"] for r in board["overall"]["ranking"]}
    assert overall == pytest.approx({m: agree[m] / pairs for m in signs}, abs=1e-12)
    assert board["level"] == "system" and board["overall"]["n"] == 24
    assert [r["n"] for r in board["directions"]] == [12, 12]


def add_multilingual(release, project) -> list[tuple[int, float, dict[str, list[int]]]]:
    """Per repetition, 6 multilingual systems over both directions: system j takes 3 triplets of level j in en-de
    and 3 of level min(j + 1, 5) in en-zh. Returns (repetition, human score, {direction: triplet indices})."""
    systems = []
    for repetition in range(2):
        for j in range(6):
            parts = {
                "en-de": [i for i in range(60) if i % 6 == j][repetition * 3 : repetition * 3 + 3],
                "en-zh": [i for i in range(60) if i % 6 == min(j + 1, 5)][repetition * 3 : repetition * 3 + 3],
            }
            human = -2.5 * (j + min(j + 1, 5))
            PseudoSystem.objects.create(
                release=release,
                project=project,
                kind="multilingual",
                direction=None,
                name=f"multi/j{j}/r{repetition}",
                level=j,
                repetition=repetition,
                seed=repetition,
                human_score=human,
                triplet_ids=[f"{code}/{i}/k{i % 6}" for code, ids in parts.items() for i in ids],
            )
            systems.append((repetition, human, parts))
    return systems


def test_system_level_ranks_the_multilingual_systems_too(scored, project):
    systems = add_multilingual(scored, project)
    board = release_leaderboard(scored, ["chrF++", "BLEU", "TER"], level="system", resamples=200, seed=2)
    signs = {"chrF++": 1.0, "BLEU": 1.0, "TER": -1.0}
    values = {code: scores_of(code) for code in CODES}
    expected = {}
    for m, sign in signs.items():
        per_repetition = []
        for repetition in range(2):
            members = [s for s in systems if s[0] == repetition]
            means = [
                np.mean([np.mean([sign * values[code][m][i] for i in ids]) for code, ids in parts.items()])
                for _, _, parts in members
            ]
            per_repetition.append(stats.pearsonr([h for _, h, _ in members], means).statistic)
        expected[m] = float(np.mean(per_repetition))
    group = board["multilingual"]
    assert group["direction"] == "multilingual" and group["n"] == 12
    assert {r["metric"]: r["value"] for r in group["ranking"]} == pytest.approx(expected, abs=1e-12)
    assert [r["metric"] for r in group["ranking"]] == sorted(expected, key=lambda m: -expected[m])
    assert group["ranking"][0]["cluster"] == 1 and group["ranking"][-1]["cluster"] >= 1
    assert group["parameters"] == board["parameters"]
    # the monolingual figures are unchanged by the multilingual group
    assert [r["n"] for r in board["directions"]] == [12, 12] and board["overall"]["n"] == 24

    # a caller who sees en-de only gets no multilingual group: every system also covers en-zh
    narrow = release_leaderboard(scored, ["chrF++", "BLEU"], level="system", resamples=50, directions=["en-de"])
    assert narrow["multilingual"] is None

    out = io.StringIO()
    call_command(
        "metaeval",
        str(scored.pk),
        "--metrics",
        "chrF++,BLEU,TER",
        "--leaderboard",
        "--level",
        "system",
        "--resamples",
        "200",
        "--seed",
        "2",
        "--format",
        "csv",
        stdout=out,
        verbosity=0,
    )
    rows = [r for r in csv.DictReader(io.StringIO(out.getvalue())) if r["direction"] == "multilingual"]
    assert {r["metric"]: float(r["value"]) for r in rows} == pytest.approx(expected, abs=1e-12)
    assert {(r["resamples"], r["seed"], r["alpha"]) for r in rows} == {("200", "2", "0.05")}
