"""Meta-evaluation with people's scores as the gold (``--gold esa|mqm``), beside the predetermined quality:
the release's ``human/span_annotations.parquet`` read per direction, the leaderboard's values against scipy on
the people's mean scores, and the annotations turned into the EvalSet's human ratings."""

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from scipy import stats

from exports.metaeval import evalset
from exports.metaeval.selectors import MetaEvaluationError, people_scores, release_human_ratings, release_leaderboard
from exports.release.domain.release_files import SPAN_ANNOTATION_SCHEMA, SPAN_ANNOTATIONS_FILE
from tests.exports.metaeval.test_metaeval_leaderboard import CODES, scored, scores_of  # noqa: F401  (scored: a fixture)

pytestmark = pytest.mark.django_db
SIGNS = {"chrF++": 1.0, "BLEU": 1.0, "TER": -1.0}


def people(code: str) -> dict[str, list[float]]:
    """ESA scores of 48 of the 60 triplets (every fifth left out), one or two annotators: 100 − 12k plus noise."""
    rng = np.random.default_rng(ord(code[-1]))
    out = {}
    for i in range(60):
        if i % 5 == 4:
            continue
        n = 2 if i % 3 == 0 else 1
        out[f"{code}/{i}/k{i % 6}"] = [
            float(np.clip(round(100 - 12 * (i % 6) + rng.normal(0, 10)), 0, 100)) for _ in range(n)
        ]
    return out


@pytest.fixture
def with_people(scored, tmp_path):  # noqa: F811
    rows = []
    for code in CODES:
        for tid, scores in people(code).items():
            for a, score in enumerate(scores):
                spans = [
                    {"side": "target", "start": 0, "end": 3, "severity": "major", "category": "", "origin": "human"}
                ]
                rows.append(
                    {
                        "triplet_id": tid,
                        "direction": code,
                        "num_errors": int(tid[-1]),
                        "task": "esa-1",
                        "protocol": "esa",
                        "annotator": f"esa-1-{a + 1}",
                        "score": score,
                        "spans": spans if int(tid[-1]) else [],
                    }
                )
    (tmp_path / "human").mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=SPAN_ANNOTATION_SCHEMA), tmp_path / SPAN_ANNOTATIONS_FILE)
    scored.path = str(tmp_path)
    scored.save()
    return scored


def test_people_scores_are_each_triplets_mean(with_people):
    for code in CODES:
        assert people_scores(with_people, code, "esa") == pytest.approx(
            {t: np.mean(s) for t, s in people(code).items()}
        )
        assert people_scores(with_people, code, "mqm") == {}
    with pytest.raises(MetaEvaluationError, match="gold 'xqm'"):
        people_scores(with_people, "en-de", "xqm")


def test_triplet_leaderboard_against_esa_equals_scipy(with_people):
    board = release_leaderboard(with_people, ["TER", "BLEU", "chrF++"], resamples=100, seed=3, gold="esa")
    assert board["gold"] == "esa"
    for row in board["directions"]:
        code = row["direction"]
        gold = people(code)
        ids = sorted(gold)
        by_id = {f"{code}/{i}/k{i % 6}": i for i in range(60)}
        for entry in row["ranking"]:
            values = scores_of(code)[entry["metric"]]
            expected = stats.pearsonr(
                [np.mean(gold[t]) for t in ids], [SIGNS[entry["metric"]] * values[by_id[t]] for t in ids]
            ).statistic
            assert entry["value"] == pytest.approx(expected, abs=1e-12)
        assert row["n"] == 48


def test_system_leaderboard_against_esa_takes_each_systems_rated_triplets(with_people):
    board = release_leaderboard(with_people, ["BLEU", "chrF++"], resamples=100, seed=3, gold="esa", level="system")
    assert "multilingual" not in board
    for row in board["directions"]:
        code = row["direction"]
        gold = people(code)
        per_group = []
        for repetition in range(2):
            human, metric = [], []
            for k in range(6):
                ids = [f"{code}/{i}/k{k}" for i in range(60) if i % 6 == k][repetition * 5 : (repetition + 1) * 5]
                rated = [np.mean(gold[t]) for t in ids if t in gold]
                human.append(np.mean(rated))
                metric.append(np.mean([scores_of(code)["chrF++"][int(t.split("/")[1])] for t in ids]))
            per_group.append(stats.pearsonr(human, metric).statistic)
        chrf = next(e for e in row["ranking"] if e["metric"] == "chrF++")
        assert chrf["value"] == pytest.approx(np.mean(per_group), abs=1e-12)


def test_the_command_takes_the_gold(with_people):
    out = io.StringIO()
    call_command(
        "metaeval",
        str(with_people.pk),
        "--metrics",
        "chrF++,BLEU",
        "--leaderboard",
        "--gold",
        "esa",
        "--resamples",
        "50",
        "--format",
        "json",
        stdout=out,
    )
    assert json.loads(out.getvalue())["gold"] == "esa"


def test_the_annotations_become_the_evalsets_human_ratings(with_people):
    ratings = release_human_ratings(with_people, "en-de")
    assert list(ratings) == ["esa"]
    expected = people("en-de")
    assert len(ratings["esa"]) == sum(len(s) for s in expected.values())
    first = next(r for r in ratings["esa"] if r.triplet_id.endswith("k1"))
    assert first.errors == [evalset.RatingError(0, 3, "major", None, None, False)]
    assert first.score in expected[first.triplet_id]


def test_the_release_page_shows_the_mean_score_per_number_of_errors(with_people, client, admin_user):
    from django.urls import reverse

    from exports.release.selectors import people_agreement

    [esa] = people_agreement(with_people, ["en-de"])
    gold = people("en-de")
    for row in esa["by_errors"]:
        scores = [s for t, ss in gold.items() if t.endswith(f"k{row['errors']}") for s in ss]
        assert row["estimate"] == pytest.approx(np.mean(scores)) and row["scores"] == len(scores)
        assert row["low"] <= row["estimate"] <= row["high"]
    flat = [(s, -int(t[-1])) for t, ss in gold.items() for s in ss]
    assert esa["spearman"] == pytest.approx(stats.spearmanr(*zip(*flat)).statistic)
    assert esa["annotations"] == len(flat) and esa["triplets"] == len(gold)
    assert people_agreement(with_people)[0]["annotations"] == sum(len(s) for c in CODES for s in people(c).values())
    client.force_login(admin_user)
    page = client.get(reverse("scores:release", args=[with_people.pk])).content.decode()
    assert "People's scores against the predetermined quality" in page
    total = sum(len(s) for c in CODES for s in people(c).values())
    assert f"ESA: {total} annotations of {2 * len(gold)} triplets" in page  # the admin sees both directions


def test_the_leaderboard_page_takes_the_gold(with_people, client, admin_user):
    from django.urls import reverse

    client.force_login(admin_user)
    url = reverse("scores:leaderboard", args=[with_people.pk])
    page = client.get(url, {"metrics": "chrF++,BLEU", "gold": "esa"}).content.decode()
    assert "against people&#x27;s ESA scores" in page
    board = release_leaderboard(with_people, ["chrF++", "BLEU"], gold="esa")
    assert f"{board['directions'][0]['n']} triplets" in page and board["directions"][0]["n"] == 48
    page = client.get(url, {"metrics": "chrF++,BLEU", "gold": "nonsense"}).content.decode()
    assert "against the predetermined quality" in page  # an unknown gold falls back, as an unknown statistic does
