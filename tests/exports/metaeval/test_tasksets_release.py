"""The WMT24 task set on a release (gold segments the items, a segment's pseudo translations the systems) and
through ``manage.py metaeval --task-set``, on an imported EvalSet and on a release, and beside the known-answer
diagnostics on their page. The seg-level values are checked against a brute-force KendallWithTiesOpt written here
(every candidate threshold tried, acc23 per segment averaged); the EvalSet path against mt-metrics-eval's fixture
(tests/exports/metaeval/test_tasksets.py)."""

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from core.models import Direction
from exports.metaeval import statistics
from exports.metaeval.taskset_selectors import release_task_set
from exports.models import MetricScore, Release
from exports.scores.services import scores_summarize
from tests.exports.metaeval.test_metaeval_diagnostics import release  # noqa: F401  (a release with the build's records)
from tests.support.asserts import every

pytestmark = pytest.mark.django_db
CODES = ("en-de", "en-zh")
SEGMENTS, LEVELS = 8, 6
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mtme"


def metric_scores(code: str) -> dict[str, np.ndarray]:
    """``(segments, levels)`` per metric: chrF++ follows k closely, BLEU loosely (rounded: ties), TER (lower is
    better) hardly; the last segment of en-zh misses its k = 5 version."""
    rng = np.random.default_rng(len(code) + ord(code[-1]))
    k = np.arange(LEVELS)[None, :]
    s = np.arange(SEGMENTS)[:, None]
    return {
        "chrF++": 80 - 8 * k - s + rng.normal(0, 1, (SEGMENTS, LEVELS)),
        "BLEU": np.round(40 - 2 * k + rng.normal(0, 4, (SEGMENTS, LEVELS))),
        "TER": 50 + 0.5 * k + rng.normal(0, 8, (SEGMENTS, LEVELS)),
    }


def present(code: str, segment: int, k: int) -> bool:
    return not (code == "en-zh" and segment == SEGMENTS - 1 and k == LEVELS - 1)


@pytest.fixture
def scored(project, languages):
    rel = Release.objects.create(project=project, version="4.0.0", status=Release.Status.READY)
    for code in CODES:
        direction = Direction.objects.get(code=code)
        for metric, values in metric_scores(code).items():
            MetricScore.objects.bulk_create(
                MetricScore(
                    release=rel,
                    metric=metric,
                    direction=direction,
                    triplet_id=f"{code}/{s}/k{k}",
                    level=k,
                    score=float(values[s, k]),
                )
                for s in range(SEGMENTS)
                for k in range(LEVELS)
                if present(code, s, k)
            )
    scores_summarize(release=rel)
    return rel


def brute_force_acc_tc(gold: list[list[float]], metric: list[list[float]]) -> float:
    """KendallWithTiesOpt(variant='acc23', sample_rate=1, average_by='item') the slow way: for every threshold
    among 0 and each within-group |Δmetric|, the mean over groups of (concordant with |Δm| > ε, or tied in gold
    with |Δm| ≤ ε) / pairs; the largest mean."""
    candidates = {0.0}
    for m in metric:
        candidates |= {abs(a - b) for i, a in enumerate(m) for b in m[i + 1 :]}
    best = -1.0
    for eps in sorted(candidates):
        values = []
        for g, m in zip(gold, metric):
            pairs = [(i, j) for i in range(len(g)) for j in range(i + 1, len(g))]
            good = sum(
                (g[i] == g[j] and abs(m[i] - m[j]) <= eps)
                or (g[i] != g[j] and abs(m[i] - m[j]) > eps and (g[i] - g[j]) * (m[i] - m[j]) > 0)
                for i, j in pairs
            )
            values.append(good / len(pairs))
        best = max(best, float(np.mean(values)))
    return best


def test_a_release_gives_every_task_of_its_directions(scored):
    board = release_task_set(scored, ["chrF++", "BLEU", "TER"], "wmt24", k=0)
    assert [(t["attributes"]["lang"], t["attributes"]["level"]) for t in board["tasks"]] == [
        ("en-de", "sys"),
        ("en-de", "seg"),
        ("en-zh", "sys"),
        ("en-zh", "seg"),
    ]
    assert board["weights"] == [0.25] * 4
    for task in board["tasks"]:
        code = task["attributes"]["lang"]
        values = {row["metric"]: row["value"] for row in task["ranking"]}
        scores = metric_scores(code)
        signs = {"chrF++": 1.0, "BLEU": 1.0, "TER": -1.0}
        if task["attributes"]["level"] == "seg":  # every segment a group of its versions
            assert task["items"] == SEGMENTS and task["systems"] == LEVELS
            for metric, value in values.items():
                gold = [[-5.0 * k for k in range(LEVELS) if present(code, s, k)] for s in range(SEGMENTS)]
                mine = [
                    [signs[metric] * scores[metric][s, k] for k in range(LEVELS) if present(code, s, k)]
                    for s in range(SEGMENTS)
                ]
                assert value == pytest.approx(brute_force_acc_tc(gold, mine), abs=1e-12), (code, metric)
        else:  # PCE over the systems #1..#6 (k = 0..5), on the segments with every version
            complete = [s for s in range(SEGMENTS) if all(present(code, s, k) for k in range(LEVELS))]
            assert task["items"] == len(complete)
            gold = np.array([[-5.0 * k] * len(complete) for k in range(LEVELS)])
            for metric, value in values.items():
                m = np.array([[signs[metric] * scores[metric][s, k] for s in complete] for k in range(LEVELS)])
                assert value == pytest.approx(statistics.soft_pairwise_accuracy(gold, m), abs=1e-12)
    overall = {row["metric"]: row for row in board["overall"]}
    assert set(overall) == {"chrF++", "BLEU", "TER"}
    assert overall["chrF++"]["average_rank"] == 1.0  # first in every task (ranks by value at k = 0)
    for metric, row in overall.items():
        values = [r["value"] for t in board["tasks"] for r in t["ranking"] if r["metric"] == metric]
        assert row["average_corr"] == pytest.approx(sum(values) / 4, abs=1e-12)


def test_with_k_the_clusters_come_from_the_tests(scored):
    board = release_task_set(scored, ["chrF++", "TER"], "wmt24", k=100, seed=5)
    for task in board["tasks"]:
        assert task["ranking"][0]["metric"] == "chrF++" and task["ranking"][0]["rank"] == 1
        p = task["p_values"]
        assert 0.0 <= p[0][1] <= 1.0
        assert task["ranking"][1]["rank"] == (2 if p[0][1] <= 0.05 else 1)


def test_command_on_a_release_and_its_formats(scored):
    out = io.StringIO()
    call_command("metaeval", f"{scored.project.name}@4.0.0", "--task-set", "wmt24", "--k", "0", stdout=out)
    text = out.getvalue()
    assert text.startswith("WMT24 task set on ") and "task4: en-zh seg" in text and "TER" in text
    out = io.StringIO()
    call_command(
        "metaeval",
        f"{scored.project.name}@4.0.0",
        "--task-set",
        "wmt24",
        "--k",
        "0",
        "--metrics",
        "chrF++,TER",
        "--format",
        "json",
        stdout=out,
    )
    board = json.loads(out.getvalue())
    assert [row["metric"] for row in board["overall"]] == ["chrF++", "TER"]
    assert every(isinstance(row["average_rank"], float) for row in board["overall"])
    with pytest.raises(CommandError, match="--k"):
        call_command("metaeval", f"{scored.project.name}@4.0.0", "--task-set", "wmt24", "--k", "-1")
    with pytest.raises(CommandError, match="at least two metrics"):
        call_command("metaeval", f"{scored.project.name}@4.0.0", "--task-set", "wmt24", "--metrics", "BLEU")


def test_command_on_an_imported_evalset_in_every_format():
    expected = json.loads((FIXTURES / "taskset_wmt24.json").read_text())
    args = [
        "metaeval",
        "--import-evalset",
        str(FIXTURES),
        "--evalset",
        expected["evalset"],
        "--task-set",
        "wmt24",
        "--k",
        "0",
        "--primary",
        ",".join(expected["primary"]),
    ]
    out = io.StringIO()
    call_command(*args, "--format", "json", stdout=out)
    board = json.loads(out.getvalue())
    for task, want in zip(board["tasks"], expected["tasks"], strict=True):
        assert task["attributes"]["lang"] == want["attributes"]["lang"]
        if task["attributes"]["level"] == "sys":  # PCE depends on the systems' order: sorted here, a set's there
            continue
        assert [r["metric"] for r in task["ranking"]] == list(want["corr_ranks"])
        for row in task["ranking"]:
            assert row["value"] == pytest.approx(want["corr_ranks"][row["metric"]][0], abs=1e-9)
    out = io.StringIO()
    call_command(*args, "--format", "csv", stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(rows) == 6 * 4 + 4 and {r["task"] for r in rows} == {f"task{i}" for i in range(1, 7)} | {"overall"}
    out = io.StringIO()
    call_command(*args, "--latex", stdout=out)
    assert out.getvalue().startswith("% WMT24 task set") and "\\end{tabular}" in out.getvalue()
    out = io.StringIO()
    call_command(*args, "--lps", "ja-zh", stdout=out)
    assert "task2: ja-zh seg" in out.getvalue() and "en-de" not in out.getvalue().split("\n", 1)[1]
    with pytest.raises(CommandError, match="language pair xx-yy not found"):
        call_command(*args, "--lps", "xx-yy")
    with pytest.raises(CommandError, match="no 'esa' human scores"):
        call_command(*args, "--gold", "esa")


def test_the_diagnostics_page_shows_the_wmt24_table(client, release, admin_user, annotator_de):  # noqa: F811
    client.force_login(admin_user)
    url = reverse("scores:diagnostics", args=[release.pk])
    page = client.get(url, {"metrics": "chrF++,BLEU"})
    text = page.content.decode()
    assert page.status_code == 200 and "<h2>WMT24 task set</h2>" in text and 'id="task-set-table"' in text
    assert text.count("<bdi>chrF++</bdi>") >= 1 and "en-zh seg acc-tc" in text
    # an annotator of en-de gets the table of en-de alone
    client.force_login(annotator_de)
    text = client.get(url, {"metrics": "chrF++,BLEU"}).content.decode()
    assert "en-de seg acc-tc" in text and "en-zh seg" not in text
    # one metric: nothing to rank
    text = client.get(url, {"metrics": "chrF++"}).content.decode()
    assert "Name at least two metrics" in text


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_with_a_worker_the_page_queues_the_table_once_and_shows_it_when_done(client, release, admin_user, redis_url):  # noqa: F811
    import redis as redis_lib
    from django.core.cache import cache

    from exports.metaeval import taskset_selectors
    from exports.metaeval.tasks import metaeval_taskset_task
    from tests.support.celery_queue import tasks_queued_to

    cache.clear()
    client.force_login(admin_user)
    url = f"{reverse('scores:diagnostics', args=[release.pk])}?metrics=chrF%2B%2B%2CBLEU"
    queue = redis_lib.Redis.from_url(redis_url)
    queue.delete("default")
    with tasks_queued_to(redis_url):
        page = client.get(url).content.decode()
        again = client.get(url).content.decode()
    for text in (page, again):
        assert "Computing the WMT24 tables" in text and 'hx-select="#task-set"' in text
        assert 'id="task-set-table"' not in text and "Additivity" in text  # the diagnostics do not wait
    assert sum(b"exports.metaeval_taskset" in m for m in queue.lrange("default", 0, -1)) == 1
    queue.delete("default")
    metaeval_taskset_task.apply((release.pk, ["chrF++", "BLEU"], None))  # what the worker runs
    assert taskset_selectors.cached_task_set(release, ["chrF++", "BLEU"], None) is not None
    done = client.get(url).content.decode()
    assert 'id="task-set-table"' in done and "Computing the WMT24 tables" not in done
