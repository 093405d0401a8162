"""The WMT24 task set against mt-metrics-eval's own ``tasks.WMT24(k=200).Run()``
(``exports/metaeval/reference/make_taskset_fixtures.py``) on an EvalSet of three language pairs the platform's exporter
wrote (``make_taskset_evalset``): every task's attributes, its metrics in order with their values (to 1e-12) and
cluster ranks, its p-values (exactly: the same seeded stream), and the overall average ranks and average
correlations with the task set's weights, as ``TaskSetResults`` gives them."""

import filecmp
import json
import os
from pathlib import Path

import pytest

from exports.metaeval import evalset, tasksets
from exports.metaeval.reference import make_taskset_evalset
from tests.support.asserts import every

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "mtme"
EXPECTED = json.loads((ROOT / "taskset_wmt24.json").read_text())


@pytest.fixture(scope="module")
def evalsets():
    return {lp: evalset.read(str(ROOT), EXPECTED["evalset"], lp) for lp in tasksets.WMT24_LPS}


def run(evalsets, k: int, *, order=True) -> tasksets.TaskSetResult:
    def scores_of(task):
        std = tasksets.standard("wmt24", task.lang)
        return tasksets.evalset_scores(
            evalsets[task.lang],
            task,
            ref=std.ref,
            gold=task.gold or std.gold,
            outliers=std.outliers,
            primary=set(EXPECTED["primary"]),
            system_order=EXPECTED["system_order"][task.lang] if order else None,
        )

    return tasksets.run(tasksets.wmt24(k=k), scores_of, seed=EXPECTED["seed"])


def test_the_exporter_writes_the_evalset_the_task_set_fixture_was_computed_on(tmp_path):
    for evs in make_taskset_evalset.build():
        evalset.write(evs, str(tmp_path))
    written = 0
    for folder, _, files in os.walk(tmp_path):
        for name in files:
            path = Path(folder) / name
            assert filecmp.cmp(path, ROOT / path.relative_to(tmp_path), shallow=False), path
            written += 1
    assert written > 40


def test_every_task_has_the_attributes_tasks_wmt24_gives_it():
    task_set = tasksets.wmt24(k=EXPECTED["k"])
    assert len(task_set.tasks) == len(EXPECTED["tasks"]) == 6
    assert task_set.weights == pytest.approx(EXPECTED["weights"], abs=0)
    for task, want in zip(task_set.tasks, EXPECTED["tasks"]):
        a = want["attributes"]
        got = task.attributes()
        for name in ("lang", "level", "avg_by", "corr_fcn", "perm_test", "k", "pval", "block_size"):
            assert str(got[name]) == a[name], name
        for name in ("early_min", "early_max"):
            assert got[name] == float(a[name])
        assert str(got["human"]) == a["human"] and str(got["primary"]) == a["primary"]
        assert str(got["replace_nans_with_zeros"]) == a["replace_nans_with_zeros"]
        assert str(got["corr_fcn_args"]).replace(" ", "") == a["corr_fcn_args"]
        assert list(task.range) == want["range"]


def test_the_tasks_select_the_systems_and_metrics_getcorrelations_selects(evalsets):
    for task in tasksets.wmt24(k=0).tasks:
        std = tasksets.standard("wmt24", task.lang)
        scores = tasksets.evalset_scores(
            evalsets[task.lang], task, ref=std.ref, gold=std.gold, primary=set(EXPECTED["primary"])
        )
        assert sorted(scores.systems) == sorted(EXPECTED["system_order"][task.lang])
        assert set(scores.metrics) == set(EXPECTED["tasks"][0]["corr_ranks"])
    # en-de includes its human output refA (several references); en-es leaves its refB out; the unrated sys06,
    # the non-primary "extra" and en-de's base-refA (a non-standard reference) are nowhere
    assert "refA" in EXPECTED["system_order"]["en-de"] and "refB" not in EXPECTED["system_order"]["en-es"]
    assert "sys06" not in EXPECTED["system_order"]["ja-zh"]


def test_the_wmt24_task_set_gives_mt_metrics_eval_tables(evalsets):
    result = run(evalsets, EXPECTED["k"])
    for got, want in zip(result.results, EXPECTED["tasks"], strict=True):
        assert got.metrics == list(want["corr_ranks"]), want["name"]
        for metric, (value, rank) in want["corr_ranks"].items():
            assert got.corr_ranks[metric][0] == pytest.approx(value, abs=1e-12), (want["name"], metric)
            assert got.corr_ranks[metric][1] == rank, (want["name"], metric)
        n = len(want["p_values"])
        for i in range(n):
            for j in range(i + 1, n):
                assert got.p_values[i][j] == pytest.approx(want["p_values"][i][j], abs=1e-12), (want["name"], i, j)
    ranks, corrs = result.average_ranks(), result.average_corrs()
    assert list(ranks) == list(EXPECTED["average_ranks"])
    assert list(ranks.values()) == pytest.approx(list(EXPECTED["average_ranks"].values()), abs=1e-12)
    assert list(corrs) == list(EXPECTED["average_corrs"])
    assert list(corrs.values()) == pytest.approx(list(EXPECTED["average_corrs"].values()), abs=1e-12)
    overall = result.as_dict()["overall"]
    assert [row["metric"] for row in overall] == list(EXPECTED["average_ranks"])


def test_without_a_test_the_ranks_follow_the_values(evalsets):
    result = run(evalsets, 0)
    for got, want in zip(result.results, EXPECTED["tasks"]):
        assert got.metrics == list(want["corr_ranks"])
        assert [r for _, r in got.corr_ranks.values()] == list(range(1, len(got.metrics) + 1))
        for metric, (value, _) in want["corr_ranks"].items():
            assert got.corr_ranks[metric][0] == pytest.approx(value, abs=1e-12)


def test_the_segment_level_values_do_not_depend_on_the_systems_order(evalsets):
    # PCE does: a p-value counts null differences >= the observed one, and with MQM's discrete scores p(j > i)
    # is not 1 - p(i > j); mt-metrics-eval's order is a set's (the hash seed's), the platform's sorted by name
    result = run(evalsets, 0, order=False)
    for got, want in zip(result.results, EXPECTED["tasks"]):
        if got.task.level == "seg":
            for metric, (value, _) in want["corr_ranks"].items():
                assert got.corr_ranks[metric][0] == pytest.approx(value, abs=1e-12)


def test_the_tables_in_every_format(evalsets):
    board = run(evalsets, 0).as_dict()
    text = tasksets.as_text(board)
    assert text.splitlines()[0].startswith("WMT24 task set") and "task6: ja-zh seg" in text
    rows = tasksets.as_csv(board).splitlines()
    assert rows[0] == "task,lang,level,corr_fcn,metric,value,rank,weight"
    assert sum(r.startswith("overall,") for r in rows) == len(board["overall"]) == 4
    parsed = json.loads(tasksets.as_json(board))
    assert {row["metric"] for row in parsed["overall"]} == {"good", "fair", "poor", "qe[noref]"}
    assert every("average_rank" in row for row in parsed["overall"])
    latex = tasksets.as_latex(board)
    assert latex.count("\\\\") == 1 + 4 and "qe[noref]" in latex and "\\textbf{1}" in latex


def test_unknown_task_set_pair_or_gold_is_a_clear_error(evalsets):
    with pytest.raises(tasksets.TaskSetError, match="unknown task set 'wmt99'"):
        tasksets.get_task_set("wmt99", None, k=0, gold=None)
    with pytest.raises(tasksets.TaskSetError, match="not found"):
        tasksets.check_lps(["xx-yy"], ["en-de"])
    task = tasksets.wmt24(k=0).tasks[0]
    with pytest.raises(tasksets.TaskSetError, match="no 'esa' human scores"):
        tasksets.evalset_scores(evalsets["en-de"], task, ref="refB", gold="esa")
    with pytest.raises(tasksets.TaskSetError, match="standard reference 'refC'"):
        tasksets.evalset_scores(evalsets["en-de"], task, ref="refC", gold="mqm")


def test_wmt25_has_the_same_two_tasks_per_pair_and_no_human_outputs():
    task_set = tasksets.wmt25(k=1000)
    assert len(task_set.tasks) == 2 * len(tasksets.WMT25_LPS) and task_set.weights == [1 / 32] * 32
    assert [t.lang for t in task_set.tasks[::2]] == sorted(tasksets.WMT25_LPS)
    assert not any(t.human for t in task_set.tasks)
    assert {(t.level, t.corr_fcn, t.avg_by, t.perm_test, t.k) for t in task_set.tasks} == {
        ("sys", "pce", "none", "scores", 1000),
        ("seg", "KendallWithTiesOpt", "item", "pairs", 1000),
    }
    assert (
        tasksets.standard("wmt25", "en-ko_KR").gold == "mqm"
        and tasksets.standard("wmt25", "en-cs_CZ").gold == "esa-human1"
    )
    assert tasksets.standard("wmt24", "en-de").ref == "refB" and tasksets.standard("wmt24", "en-cs").gold == "esa"
