"""``average_by`` on a release and an EvalSet import, end to end: a release's gold segments as items (their pseudo
translations the systems) in the leaderboard, the command and the page, against scipy per segment; the command on
the grouped EvalSet against mt-metrics-eval's ``CompareMetrics`` (``tests/fixtures/mtme-grouped/expected.json``)."""

import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from scipy import stats

from core.models import Direction
from exports.metaeval.selectors import MetaEvaluationError, release_leaderboard
from exports.models import MetricScore, Release
from exports.scores.services import scores_summarize
from tests.support.asserts import every

pytestmark = pytest.mark.django_db
CODES = ("en-de", "en-zh")
SEGMENTS = 12
GROUPED = Path(__file__).resolve().parents[2] / "fixtures" / "mtme-grouped"


def scores_of(code: str) -> dict[str, np.ndarray]:
    """(segment, k) scores: chrF++ follows the errors within a segment, BLEU loosely, and TER (lower is better)
    gives some segments one score for all their pseudo translations (a constant vector: NaN there)."""
    rng = np.random.default_rng(ord(code[-1]))
    k = np.tile(np.arange(6), (SEGMENTS, 1))
    base = rng.normal(0, 10, (SEGMENTS, 1))  # segments differ in difficulty: a flattened τ mixes them
    ter = 50 + 2 * k - base + rng.normal(0, 3, k.shape)
    ter[::4] = 55.0
    return {
        "chrF++": 80 - 4 * k + base + rng.normal(0, 1, k.shape),
        "BLEU": 40 - 2 * k + base + rng.normal(0, 4, k.shape),
        "TER": ter,
    }


@pytest.fixture
def segmented(project, languages):
    release = Release.objects.create(project=project, version="3.0.0", status=Release.Status.READY)
    for code in CODES:
        direction = Direction.objects.get(code=code)
        for metric, values in scores_of(code).items():
            MetricScore.objects.bulk_create(
                MetricScore(
                    release=release,
                    metric=metric,
                    direction=direction,
                    triplet_id=f"{code}/s{segment}/{'reference' if k == 0 else f'Omission.head+{k}'}",
                    level=k,
                    score=float(values[segment, k]),
                )
                for segment in range(SEGMENTS)
                for k in range(6)
            )
    scores_summarize(release=release)
    return release


def per_segment(code: str, statistic) -> dict[str, list[float]]:
    signs = {"chrF++": 1.0, "BLEU": 1.0, "TER": -1.0}
    human = -5.0 * np.arange(6)
    out = {}
    for metric, values in scores_of(code).items():
        with np.errstate(invalid="ignore"):
            out[metric] = [statistic(human, signs[metric] * row) for row in values]
    return out


def _pearson(x, y):
    return np.nan if np.all(y == y[0]) else stats.pearsonr(x, y).statistic


def _kendall(x, y):
    return stats.kendalltau(x, y).statistic


@pytest.mark.parametrize(("name", "statistic"), [("pearson", _pearson), ("kendall-b", _kendall)])
@pytest.mark.parametrize("zeros", [False, True])
def test_item_grouped_leaderboard_is_the_mean_over_segments(segmented, name, statistic, zeros):
    board = release_leaderboard(
        segmented,
        ["chrF++", "BLEU", "TER"],
        statistic=name,
        resamples=50,
        average_by="item",
        replace_nans_with_zeros=zeros,
    )
    pooled = {m: [] for m in ("chrF++", "BLEU", "TER")}
    for row in board["directions"]:
        assert row["groups"] == SEGMENTS and row["n"] == SEGMENTS * 6
        expected = {}
        for metric, values in per_segment(row["direction"], statistic).items():
            values = np.nan_to_num(values) if zeros else np.asarray(values)[~np.isnan(values)]
            expected[metric] = float(np.mean(values))
            pooled[metric].extend(values)
        assert {r["metric"]: r["value"] for r in row["ranking"]} == pytest.approx(expected, abs=1e-12)
        assert every("low" not in r for r in row["ranking"])  # intervals: average_by none only
        assert row["parameters"]["average_by"] == "item" and row["parameters"]["replace_nans_with_zeros"] is zeros
    overall = {r["metric"]: r["value"] for r in board["overall"]["ranking"]}
    assert overall == pytest.approx({m: float(np.mean(v)) for m, v in pooled.items()}, abs=1e-12)
    assert board["overall"]["groups"] == 2 * SEGMENTS


def test_item_grouping_differs_from_the_flattened_statistic(segmented):
    """Segments of different difficulty: within a segment chrF++ orders the versions well; flattened, the segments'
    levels mix in. The grouped value is the per-segment one, not the flattened one."""
    flat = release_leaderboard(segmented, ["chrF++", "BLEU"], statistic="kendall-b", resamples=20)
    grouped = release_leaderboard(segmented, ["chrF++", "BLEU"], statistic="kendall-b", resamples=20, average_by="item")
    value = {
        g: {r["metric"]: r["value"] for r in b["overall"]["ranking"]} for g, b in (("flat", flat), ("item", grouped))
    }
    assert value["item"]["chrF++"] > value["flat"]["chrF++"] + 0.1


def test_tie_calibrated_accuracy_by_segment_uses_the_pairs_test(segmented):
    board = release_leaderboard(
        segmented, ["chrF++", "BLEU", "TER"], statistic="acc23-tc", resamples=50, average_by="item"
    )
    for group in [*board["directions"], board["overall"]]:
        assert group["parameters"]["perm_test"] == "pairs"
        assert every(r["epsilon"] >= 0 for r in group["ranking"])
        assert every(0 <= r["value"] <= 1 for r in group["ranking"])
    with pytest.raises(MetaEvaluationError, match="sys"):
        release_leaderboard(segmented, ["chrF++", "BLEU"], average_by="sys")
    with pytest.raises(MetaEvaluationError, match="pairs test"):
        release_leaderboard(segmented, ["chrF++", "BLEU"], statistic="pearson", test="pairs")


def test_command_and_page_take_average_by(segmented, client, admin_user):
    out = []
    call_command(
        "metaeval",
        "demo@3.0.0",
        "--metrics",
        "chrF++,BLEU",
        "--leaderboard",
        "--average-by",
        "item",
        "--statistic",
        "acc23-tc",
        "--resamples",
        "20",
        "--format",
        "json",
        stdout=_Sink(out),
    )
    board = json.loads("".join(out))
    assert board["average_by"] == "item" and board["overall"]["parameters"]["perm_test"] == "pairs"
    client.force_login(admin_user)
    url = reverse("scores:leaderboard", args=[segmented.pk])
    page = client.get(url, {"metrics": "chrF++,BLEU", "average_by": "item"})
    assert page.status_code == 200 and f"{SEGMENTS} segments" in page.content.decode()
    assert client.get(url, {"metrics": "chrF++,BLEU", "average_by": "bogus"}).status_code == 200


class _Sink:
    def __init__(self, parts):
        self.parts = parts

    def write(self, text, *args, **kwargs):
        self.parts.append(text)

    def flush(self):
        pass


def test_import_command_equals_compare_metrics_by_item():
    expected = json.loads((GROUPED / "expected.json").read_text())
    case = next(c for c in expected["compare"] if c["statistic"] == "acc23-tc" and c["block_size"] == 1000)
    out = []
    call_command(
        "metaeval",
        "--import-evalset",
        str(GROUPED),
        "--evalset",
        expected["evalset"],
        "--lp",
        expected["lp"],
        "--gold",
        expected["gold"],
        "--level",
        "seg",
        "--statistic",
        "acc23-tc",
        "--average-by",
        "item",
        "--resamples",
        str(expected["resamples"]),
        "--seed",
        str(expected["seed"]),
        "--format",
        "json",
        stdout=_Sink(out),
    )
    result = json.loads("".join(out))
    assert [r["metric"] for r in result["ranking"]] == case["order"]
    assert [r["cluster"] for r in result["ranking"]] == case["ranks"]
    assert [r["value"] for r in result["ranking"]] == pytest.approx(case["values"], abs=1e-12)
    n = len(case["order"])
    assert [
        result["p_values"][f"{case['order'][i]} > {case['order'][j]}"] for i in range(n) for j in range(i + 1, n)
    ] == [case["p_values"][i][j] for i in range(n) for j in range(i + 1, n)]
    assert result["systems"] == len(expected["systems"])  # the human translation left out
    with pytest.raises(CommandError, match="average_by must be none"):
        call_command(
            "metaeval",
            "--import-evalset",
            str(GROUPED),
            "--evalset",
            expected["evalset"],
            "--lp",
            expected["lp"],
            "--gold",
            expected["gold"],
            "--level",
            "sys",
            "--average-by",
            "item",
            stdout=_Sink([]),
        )
