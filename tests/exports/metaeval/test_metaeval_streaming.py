"""Meta-evaluation one direction at a time, the multilingual systems read once and spooled per direction
(issue 15): on a release of the shared data, every figure equals, to the last digit, the computation over
every score and system held together."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow.parquet as pq
import pytest

from core.models import Direction, Project
from exports.benchmark.services import build_run
from exports.metaeval import domain as metaeval
from exports.metaeval.selectors import release_meta_evaluation
from exports.models import MetricScore, PseudoSystem
from exports.release import services
from exports.scores.services import scores_summarize
from tests.exports.conftest import import_languages

pytestmark = [pytest.mark.shared_data, pytest.mark.django_db]


def fake_metric(mt: str, ref: str) -> float:
    """A deterministic score with the right trend (edits lower it) and some noise, so τ is not trivial."""
    shared = len(set(mt.split()) & set(ref.split())) / max(len(set(ref.split())), 1)
    noise = int(hashlib.sha256(mt.encode()).hexdigest()[:6], 16) / 0xFFFFFF
    return 100 * shared + 400 * noise  # noise enough to mis-rank some multilingual systems


def held_together(release, metric: str, variant: str) -> dict:
    """The meta-evaluation as computed before it streamed: every score, oriented copy and system in memory."""
    from exports.metaeval.selectors import _orientation, _systems

    better, sign = _orientation(metric)
    raw, per_direction = {}, {}
    for triplet, direction, level, score in MetricScore.objects.filter(release=release, metric=metric).values_list(
        "triplet_id", "direction__code", "level", "score"
    ):
        raw[triplet] = score
        per_direction.setdefault(direction, ([], []))
        per_direction[direction][0].append(sign * score)
        per_direction[direction][1].append(-5.0 * level)
    oriented = {t: sign * s for t, s in raw.items()}
    out = {"triplet_level": [], "cv": []}
    for direction, (m, h) in sorted(per_direction.items()):
        tau = metaeval.tau_statistic(m, h, variant)
        out["triplet_level"].append({"direction": direction, "tau": tau.value, "n": tau.n, "epsilon": tau.epsilon})
    mono = _systems(release, "monolingual", None)
    out["system_level"] = metaeval.monolingual_system_tau(mono, oriented, variant)
    means = {}
    for system in mono:  # in (repetition, name) order: each level's directions in the order they first come
        means.setdefault(system.level, {}).setdefault(system.direction_code, []).append(
            metaeval.system_score(system, raw)
        )
    for level in sorted(means):
        per_dir = [float(np.mean(v)) for v in means[level].values()]
        out["cv"].append(
            {
                "level": level,
                "cv": metaeval.coefficient_of_variation(per_dir),
                "directions": len(per_dir),
                "std": "sample",
            }
        )
    multi = _systems(release, "multilingual", None)
    study = metaeval.multilingual_study(multi, oriented, metaeval.lgn_from_systems(mono, oriented), variant)
    out["multilingual"] = (
        study.repetitions,
        study.tau_plain,
        study.tau_lgn,
        study.test.statistic if study.test else None,
        study.test.pvalue if study.test else None,
    )
    return out


@pytest.mark.slow
def test_streamed_meta_evaluation_equals_the_held_computation_to_the_last_digit(shared_data, tmp_path):
    import_languages("xqm", shared_data, ["de", "zh", "id"])
    project = Project.objects.get(name="xqm")
    project.options = {"sampling": {"monolingual_repetitions": 3, "multilingual_repetitions": 6}}
    project.save()
    build_run(project=project)
    release = services.release_create(project=project, version="1.0.0", out_dir=tmp_path / "r")
    scores = []
    for direction in Direction.objects.filter(code__in=["en-de", "en-zh", "en-id"]):
        table = pq.read_table(
            tmp_path / "r" / direction.code / "test.parquet", columns=["triplet_id", "mt", "ref", "num_errors"]
        ).to_pylist()
        scores += [
            MetricScore(
                release=release,
                metric=metric,
                direction=direction,
                triplet_id=r["triplet_id"],
                level=r["num_errors"],
                score=sign * fake_metric(r["mt"], r["ref"]),
            )
            for r in table
            for metric, sign in (("chrF++", 1.0), ("MetricX-23", -1.0))
        ]
    MetricScore.objects.bulk_create(scores, batch_size=5000)
    scores_summarize(release=release)  # as the ingest does
    assert PseudoSystem.objects.filter(release=release, kind="multilingual").count() == 10 * 6
    for metric, variant in (("chrF++", "b"), ("MetricX-23", "c"), ("chrF++", "acc23-tc")):
        got = release_meta_evaluation(release, metric, variant=variant)
        want = held_together(release, metric, variant)
        assert got["triplet_level"] == want["triplet_level"] and len(got["triplet_level"]) == 3
        assert got["system_level"] == want["system_level"]
        assert got["cv"] == want["cv"] and len(got["cv"]) == 6
        m = got["multilingual"]
        assert (m["repetitions"], m["tau_plain"], m["tau_lgn"], m["t"], m["p"]) == want[
            "multilingual"
        ]  # exact floats, not approx
        assert m["repetitions"] == 6 and m["tau_plain"] < 1 and m["t"] is not None
