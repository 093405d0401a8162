"""WMT's task sets (mt-metrics-eval ``tasks.WMT24`` / ``tasks.WMT25``): the tasks, run on the platform's statistics,
and the overall table of ``TaskSetResults`` (pure Python, no Django).

A task is one language pair at one level with one statistic; WMT24 and WMT25 have two per language pair:
- ``sys`` level, ``pce``: soft pairwise accuracy (1 − PCE) over the systems, from their segment scores, with the
  ``scores`` permutation test (``PermutationSigDiff``) for the clusters;
- ``seg`` level, ``KendallWithTiesOpt`` (acc23 with tie calibration, ``sample_rate`` 1) averaged by item (one value
  per source segment over the systems that translated it, one threshold for all), with the ``pairs`` permutation
  test (``PairwisePermutationSigDiff``).
Every task has weight 1/len, k resamples (mt-metrics-eval's default 0: values and ranks without a test), p = 0.05,
blocks of 100 draws for early stopping below 0.02 and above 0.5. WMT24 includes human outputs (systems named
after a non-standard reference) for en-de, the one pair with several references; WMT25 for none.

The overall table is ``TaskSetResults.AverageRanks`` (each metric's weighted mean cluster rank over the tasks) and
``AverageCorrs`` (its weighted mean value, each task's value mapped to [0, 1] by its range first), over the metrics
present in every task. The permutation tests of all tasks draw from one random stream, task after task, as
``TaskSet.Run`` does from numpy's global one.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from exports.metaeval.leaderboard import latex_escape

CORR_FUNCTIONS = {  # mt-metrics-eval's name -> the platform's statistic
    "pce": "pce",
    "KendallWithTiesOpt": "acc23-tc",
}
CORR_LABELS = {"pce": "soft pairwise accuracy (1 − PCE)", "KendallWithTiesOpt": "acc23, tie-calibrated"}
MAX_K = 100_000


class TaskSetError(ValueError):
    pass


@dataclass(frozen=True)
class Task:
    """mt-metrics-eval's ``tasks.Task``, the attributes WMT24/25 set (the others at their defaults)."""

    test_set: str
    lang: str
    level: str
    corr_fcn: str
    human: bool
    gold: str | None = None
    avg_by: str = "none"
    k: int = 0
    primary: bool = True
    pval: float = 0.05
    block_size: int = 100
    early_min: float = 0.02
    early_max: float = 0.50
    replace_nans_with_zeros: bool = False
    perm_test: str = "scores"
    corr_fcn_args: tuple[tuple[str, float | str], ...] = ()

    @property
    def variant(self) -> str:
        return str(dict(self.corr_fcn_args).get("variant", "acc23"))

    @property
    def statistic(self) -> str:
        if self.corr_fcn == "KendallWithTiesOpt" and self.variant == "23":
            return "tau23-tc"
        return CORR_FUNCTIONS[self.corr_fcn]

    @property
    def range(self) -> tuple[float, float]:
        """``TaskResults.range``: accuracies in [0, 1], correlations in [-1, 1]."""
        if self.corr_fcn in ("accuracy", "pce") or (self.corr_fcn == "KendallWithTiesOpt" and self.variant != "23"):
            return (0.0, 1.0)
        return (-1.0, 1.0)

    @property
    def label(self) -> str:
        return f"{self.lang} {self.level} {CORR_LABELS.get(self.corr_fcn, self.corr_fcn)}"

    def attributes(self) -> dict:
        """The attributes in mt-metrics-eval's order (``tasks.Task``'s), the arguments of the correlation as a dict."""
        names = (
            "test_set",
            "lang",
            "level",
            "human",
            "avg_by",
            "corr_fcn",
            "k",
            "gold",
            "primary",
            "pval",
            "block_size",
            "early_min",
            "early_max",
            "replace_nans_with_zeros",
            "perm_test",
        )
        return {name: getattr(self, name) for name in names} | {"corr_fcn_args": dict(self.corr_fcn_args)}


@dataclass(frozen=True)
class TaskSet:
    name: str
    tasks: list[Task]
    weights: list[float]


def _wmt(test_set: str, lps: Sequence[str], several_refs: set[str], k: int, gold: str | None, primary: bool) -> TaskSet:
    tasks = []
    for lp in sorted(lps):
        human = lp in several_refs
        tasks.append(Task(test_set, lp, "sys", "pce", human, gold, k=k, primary=primary))
        tasks.append(
            Task(
                test_set,
                lp,
                "seg",
                "KendallWithTiesOpt",
                human,
                gold,
                avg_by="item",
                k=k,
                primary=primary,
                perm_test="pairs",
                corr_fcn_args=(("sample_rate", 1.0),),
            )
        )
    return TaskSet(test_set, tasks, [1 / len(tasks)] * len(tasks))


WMT24_LPS = ("en-de", "en-es", "ja-zh")
WMT25_LPS = (
    "cs-de_DE",
    "cs-uk_UA",
    "en-ar_EG",
    "en-bho_IN",
    "en-cs_CZ",
    "en-et_EE",
    "en-is_IS",
    "en-it_IT",
    "en-ja_JP",
    "en-ko_KR",
    "en-mas_KE",
    "en-ru_RU",
    "en-sr_Cyrl_RS",
    "en-uk_UA",
    "en-zh_CN",
    "ja-zh_CN",
)


def wmt24(lps: Sequence[str] | None = None, *, k: int = 0, gold: str | None = None, primary: bool = True) -> TaskSet:
    """``tasks.WMT24``: per language pair (sorted) PCE at sys level and item-grouped tie-calibrated accuracy at seg
    level; human outputs for en-de (its several references)."""
    return _wmt("wmt24", lps or WMT24_LPS, {"en-de"}, k, gold, primary)


def wmt25(lps: Sequence[str] | None = None, *, k: int = 0, gold: str | None = None, primary: bool = True) -> TaskSet:
    """``tasks.WMT25``: the same two tasks per language pair, no human outputs anywhere."""
    return _wmt("wmt25", lps or WMT25_LPS, set(), k, gold, primary)


TASK_SETS: dict[str, Callable[..., TaskSet]] = {"wmt24": wmt24, "wmt25": wmt25}


@dataclass(frozen=True)
class Standard:
    """What ``meta_info`` says of a language pair: its standard reference and gold, its outlier systems."""

    ref: str = "refA"
    gold: str = "mqm"
    outliers: frozenset[str] = frozenset()


# meta_info.DATA of the two test sets; a pair it does not list (an EvalSet of one's own) gets refA and mqm
STANDARDS: dict[str, dict[str, Standard]] = {
    "wmt24": {
        "en-de": Standard("refB", "mqm", frozenset({"MSLC"})),
        "en-es": Standard("refA", "mqm", frozenset({"MSLC"})),
        "ja-zh": Standard("refA", "mqm", frozenset({"MSLC"})),
        **{
            lp: Standard("refA", "esa")
            for lp in ("cs-uk", "en-cs", "en-hi", "en-is", "en-ja", "en-ru", "en-uk", "en-zh")
        },
    },
    "wmt25": {
        **{lp: Standard("refA", "esa-human1") for lp in WMT25_LPS},
        "ja-zh_CN": Standard("refA", "mqm"),
        "en-ko_KR": Standard("refA", "mqm"),
    },
}


def standard(task_set: str, lp: str) -> Standard:
    return STANDARDS.get(task_set, {}).get(lp, Standard())


def get_task_set(name: str, lps: Sequence[str] | None, *, k: int, gold: str | None) -> TaskSet:
    try:
        build = TASK_SETS[name]
    except KeyError:
        raise TaskSetError(f"unknown task set {name!r}; choose one of {', '.join(TASK_SETS)}") from None
    if not 0 <= k <= MAX_K:
        raise TaskSetError(f"k: between 0 and {MAX_K}")
    return build(lps, k=k, gold=gold)


# ---- a language pair's scores, as GetCorrelations selects them -------------------------------------------------


@dataclass
class Scores:
    """One task's inputs: the systems in the order their scores are flattened, the gold segment scores
    ``(systems, segments)`` with None where there is none, and each metric's (display name → the same shape)."""

    systems: list[str]
    gold: list[list[float | None]]
    metrics: dict[str, list[list[float]]]


def parse_metric_name(name: str, references: Iterable[str]) -> tuple[str, set[str]]:
    """``BASE-REF`` → (base, references used): ``src`` none, ``all`` every one, ``refA.refB`` both
    (``EvalSet.ParseMetricName``)."""
    base, _, refs = name.rpartition("-")
    if not base:
        raise TaskSetError(f"metric {name!r}: not in NAME-REF form")
    if refs == "all":
        return base, set(references)
    if refs == "src":
        return base, set()
    return base, set(refs.split("."))


def display_name(base: str, refs: set[str], primary: set[str] | None) -> str:
    """``EvalSet.DisplayName(fmt='spreadsheet')``: ``*`` before a non-primary metric, ``[noref]`` after a
    reference-free one. ``primary`` None: every metric counts as primary."""
    name = base if primary is None or base in primary else "*" + base
    return name if refs else name + "[noref]"


def evalset_scores(
    evs,
    task: Task,
    *,
    ref: str,
    gold: str,
    outliers: Iterable[str] = (),
    primary: set[str] | None = None,
    system_order: Sequence[str] | None = None,
) -> Scores:
    """``data.GetCorrelations`` on an imported EvalSet (``exports.metaeval.evalset.EvalSet``) at seg level (both
    tasks read segment scores): the systems less the standard reference, the human outputs unless the task
    includes them, the outliers, and any without a single gold score; the metrics that use no reference but the
    standard one, primary ones only when the task says so (and ``primary`` names them). Systems sorted by name
    unless ``system_order`` gives mt-metrics-eval's (a set's iteration order, which the hash seed decides)."""
    primary = primary or None  # an empty set names none: every metric is primary, as mt-metrics-eval reads it
    human = evs.human.get((gold, "seg"))
    if human is None:
        names = sorted({scorer for scorer, level in evs.human if level == "seg"})
        raise TaskSetError(
            f"{evs.name}/{evs.lp}: no {gold!r} human scores at seg level (there are: {', '.join(names) or 'none'})"
        )
    if ref not in evs.references:
        raise TaskSetError(
            f"{evs.name}/{evs.lp}: standard reference {ref!r} not among {', '.join(sorted(evs.references)) or 'none'}"
        )
    human_outputs = set(evs.references) & set(evs.outputs)
    systems = set(evs.outputs) - {ref} - set(outliers)
    if not task.human:
        systems -= human_outputs
    rated = {s for s, values in human.items() if any(v is not None for v in values)}
    systems &= rated
    if system_order is not None:
        if set(system_order) != systems:
            raise TaskSetError(
                f"{evs.name}/{evs.lp}: the system order names {sorted(system_order)}, the task has {sorted(systems)}"
            )
        ordered = list(system_order)
    else:
        ordered = sorted(systems)
    metrics: dict[str, list[list[float]]] = {}
    for (metric, level), scores in sorted(evs.metrics.items()):
        if level != "seg":
            continue
        base, used = parse_metric_name(metric, evs.references)
        if task.primary and primary is not None and base not in primary:
            continue
        if not used <= {ref}:
            continue
        missing = [s for s in ordered if s not in scores]
        if missing:
            raise TaskSetError(f"{evs.name}/{evs.lp}: metric {metric} has no seg scores for {', '.join(missing)}")
        metrics[display_name(base, used, primary)] = [list(scores[s]) for s in ordered]
    if len(ordered) < 2:
        raise TaskSetError(f"{evs.name}/{evs.lp}: fewer than two systems with {gold!r} scores")
    if not metrics:
        raise TaskSetError(f"{evs.name}/{evs.lp}: no metric with seg scores that uses only {ref}")
    return Scores(ordered, [list(human[s]) for s in ordered], metrics)


# ---- running the tasks ------------------------------------------------------------------------------------------


@dataclass
class TaskResult:
    """``TaskResults``: per metric (value, cluster rank), in decreasing value (name breaking ties), and the p-value
    matrix of the permutation tests (zeros when k = 0)."""

    task: Task
    corr_ranks: dict[str, tuple[float, int]]
    p_values: list[list[float]]
    systems: int
    items: int

    @property
    def metrics(self) -> list[str]:
        return list(self.corr_ranks)

    def as_dict(self) -> dict:
        return {
            "task": self.task.label,
            "attributes": self.task.attributes(),
            "statistic": self.task.statistic,
            "range": list(self.task.range),
            "systems": self.systems,
            "items": self.items,
            "ranking": [{"metric": m, "value": v, "rank": r} for m, (v, r) in self.corr_ranks.items()],
            "p_values": self.p_values,
        }


def _flat(scores: Scores, task: Task):
    """The statistics' inputs of a task: flat gold and metric vectors, their groups, the system count."""
    from exports.metaeval import statistics

    gold = np.array([[np.nan if v is None else float(v) for v in row] for row in scores.gold], dtype=float)
    metrics = {m: np.asarray(rows, dtype=float) for m, rows in scores.metrics.items()}
    for name, matrix in metrics.items():
        if matrix.shape != gold.shape:
            raise TaskSetError(f"{task.lang}: metric {name} has {matrix.shape} scores for {gold.shape} human scores")
    if task.corr_fcn == "pce":  # system-major, every entry; the statistic drops the unrated and reshapes by system
        return gold.ravel(), {m: v.ravel() for m, v in metrics.items()}, None, len(scores.systems)
    grouped = statistics.group_scores(gold, metrics, task.avg_by)
    return grouped.gold, grouped.metrics, grouped.bounds, len(scores.systems)


def run_task(task: Task, scores: Scores, rng: np.random.RandomState) -> TaskResult:
    """``Task.Run``: each metric's value, and with k > 0 the permutation tests of every pair (``ComputeSigMatrix``)
    and the clusters (``AssignRanks``); k = 0 ranks by value alone (1, 2, ...)."""
    from exports.metaeval import statistics

    gold, metrics, bounds, systems = _flat(scores, task)
    extra = {"systems": systems} if task.corr_fcn == "pce" else {}  # PCE reshapes its vectors by system
    items = len(scores.gold[0]) if scores.gold else 0
    if task.k == 0:
        values = statistics.average_correlations(
            task.statistic, gold, metrics, bounds, replace_nans_with_zeros=task.replace_nans_with_zeros, **extra
        )
        order = sorted(values, key=lambda m: (-values[m], m))
        n = len(order)
        return TaskResult(
            task, {m: (values[m], i + 1) for i, m in enumerate(order)}, np.zeros((n, n)).tolist(), systems, items
        )
    result = statistics.permutation_significance(
        task.statistic,
        gold,
        metrics,
        bounds,
        resamples=task.k,
        seed=None,
        rng=rng,  # one stream for every task
        block_size=task.block_size,
        early_min=task.early_min,
        early_max=task.early_max,
        alpha=task.pval,
        replace_nans_with_zeros=task.replace_nans_with_zeros,
        test=task.perm_test,
        average_by=task.avg_by,
        **extra,
    )
    corr_ranks = {m: (float(v), int(r)) for m, v, r in zip(result.metrics, result.values, result.ranks)}
    return TaskResult(task, corr_ranks, np.asarray(result.p_values).tolist(), systems, items)


@dataclass
class TaskSetResult:
    """``TaskSetResults`` with the task set's weights: every task's table and the overall one."""

    name: str
    results: list[TaskResult]
    weights: list[float]
    seed: int
    source: str = ""

    def average_ranks(self) -> dict[str, float]:
        """``AverageRanks(weights)``: Σ rank·weight over the tasks, metrics in every task only, increasing (a stable
        sort: equal averages keep the order the first task lists them in)."""
        ranks: dict[str, list[float]] = {}
        for result, weight in zip(self.results, self.weights):
            for metric in result.metrics:
                ranks.setdefault(metric, []).append(result.corr_ranks[metric][1] * weight)
        totals = {m: sum(v) for m, v in ranks.items() if len(v) == len(self.results)}
        return dict(sorted(totals.items(), key=lambda x: x[1]))

    def average_corrs(self) -> dict[str, float]:
        """``AverageCorrs(weights)``: Σ weight·(value − b)/(e − b) over the tasks, the task's range (b, e) mapping
        correlations and accuracies alike to [0, 1]; decreasing."""
        corrs: dict[str, list[float]] = {}
        for result, weight in zip(self.results, self.weights):
            b, e = result.task.range
            for metric in result.metrics:
                corrs.setdefault(metric, []).append((result.corr_ranks[metric][0] - b) / (e - b) * weight)
        totals = {m: sum(v) for m, v in corrs.items() if len(v) == len(self.results)}
        return dict(sorted(totals.items(), key=lambda x: -x[1]))

    def as_dict(self) -> dict:
        ranks, corrs = self.average_ranks(), self.average_corrs()
        return {
            "task_set": self.name,
            "source": self.source,
            "seed": self.seed,
            "weights": self.weights,
            "tasks": [r.as_dict() for r in self.results],
            "overall": [{"metric": m, "average_rank": r, "average_corr": corrs[m]} for m, r in ranks.items()],
        }


def run(task_set: TaskSet, scores_of: Callable[[Task], Scores], *, seed: int = 0, source: str = "") -> TaskSetResult:
    """``TaskSet.Run``: the tasks in order, their tests drawing one stream seeded once."""
    if len(task_set.weights) != len(task_set.tasks):
        raise TaskSetError(f"{len(task_set.weights)} weights for {len(task_set.tasks)} tasks")
    rng = np.random.RandomState(seed)
    results = [run_task(task, scores_of(task), rng) for task in task_set.tasks]
    return TaskSetResult(task_set.name, results, list(task_set.weights), seed, source)


# ---- the tables: text, CSV, JSON, LaTeX -------------------------------------------------------------------------


def _overall(board: dict) -> list[dict]:
    return board["overall"]


def _metrics(board: dict) -> list[str]:
    listed = [row["metric"] for row in _overall(board)]
    for task in board["tasks"]:  # a metric missing from some task has no average; listed after the others
        listed += [row["metric"] for row in task["ranking"] if row["metric"] not in listed]
    return listed


def _cell(task: dict, metric: str) -> dict | None:
    return next((row for row in task["ranking"] if row["metric"] == metric), None)


def _header(board: dict) -> str:
    k = board["tasks"][0]["attributes"]["k"] if board["tasks"] else 0
    test = f"clusters by permutation test, k={k}, seed {board['seed']}" if k else "k=0: ranks by value, no test"
    return f"{board['task_set'].upper()} task set{' on ' + board['source'] if board['source'] else ''}: {len(board['tasks'])} tasks, weights {', '.join(f'{w:.4g}' for w in board['weights'])}; {test}"


def as_text(board: dict) -> str:
    lines = [_header(board)]
    for i, task in enumerate(board["tasks"], 1):
        lines.append(f"  task{i}: {task['task']} ({task['systems']} systems, {task['items']} segments)")
    names = [f"task{i}" for i in range(1, len(board["tasks"]) + 1)]
    width = max([len("metric")] + [len(m) for m in _metrics(board)])
    lines.append(f"  {'metric':<{width}}  {'avg rank':>8}  {'avg corr':>8}  " + "  ".join(f"{n:>11}" for n in names))
    averages = {row["metric"]: row for row in _overall(board)}
    for metric in _metrics(board):
        avg = averages.get(metric)
        head = f"{avg['average_rank']:>8.3f}  {avg['average_corr']:>8.4f}" if avg else f"{'--':>8}  {'--':>8}"
        cells = []
        for task in board["tasks"]:
            cell = _cell(task, metric)
            cells.append(f"{cell['rank']:>3} {cell['value']:7.4f}" if cell else f"{'--':>11}")
        lines.append(f"  {metric:<{width}}  {head}  " + "  ".join(cells))
    return "\n".join(lines) + "\n"


def as_csv(board: dict) -> str:
    """A row per task and metric, then the overall rows (task ``overall``: the average rank and correlation)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["task", "lang", "level", "corr_fcn", "metric", "value", "rank", "weight"])

    def safe(metric: str) -> str:
        return "'" + metric if metric[:1] in "=+-@" else metric  # a spreadsheet would run it as a formula

    for i, (task, weight) in enumerate(zip(board["tasks"], board["weights"]), 1):
        a = task["attributes"]
        for row in task["ranking"]:
            writer.writerow(
                [
                    f"task{i}",
                    a["lang"],
                    a["level"],
                    a["corr_fcn"],
                    safe(row["metric"]),
                    repr(row["value"]),
                    row["rank"],
                    weight,
                ]
            )
    for row in _overall(board):
        writer.writerow(
            [
                "overall",
                "",
                "",
                "average_corr",
                safe(row["metric"]),
                repr(row["average_corr"]),
                repr(row["average_rank"]),
                "",
            ]
        )
    return out.getvalue()


def as_json(board: dict) -> str:
    return json.dumps(board, indent=2, ensure_ascii=False)


def as_latex(board: dict) -> str:
    """A ``tabular`` as ``TaskSetResults.Table(fmt='latex')`` lays it out with the averages first: a row per metric,
    the average rank and correlation, then per task rank and value (rank 1 in bold)."""
    tasks = board["tasks"]
    averages = {row["metric"]: row for row in _overall(board)}
    lines = [
        f"% {latex_escape(_header(board))}",
        "\\begin{tabular}{l|rr" + "|rr" * len(tasks) + "}",
        "\\toprule",
        "Metric & \\multicolumn{2}{|l}{average} & "
        + " & ".join(
            f"\\multicolumn{{2}}{{|l}}{{{latex_escape(t['attributes']['lang'] + ' ' + t['attributes']['level'] + ' ' + t['attributes']['corr_fcn'])}}}"
            for t in tasks
        )
        + " \\\\",
        "\\midrule",
    ]
    for metric in _metrics(board):
        avg = averages.get(metric)
        row = [
            latex_escape(metric),
            f"{avg['average_rank']:.3f}" if avg else "--",
            f"{avg['average_corr']:.3f}" if avg else "--",
        ]
        for task in tasks:
            cell = _cell(task, metric)
            if cell is None:
                row += ["--", "--"]
                continue
            rank, value = f"{cell['rank']:d}", f"{cell['value']:.3f}"
            if cell["rank"] == 1:
                rank, value = f"\\textbf{{{rank}}}", f"\\textbf{{{value}}}"
            row += [rank, value]
        lines.append(" & ".join(row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


FORMATS: dict[str, Callable[[dict], str]] = {"text": as_text, "csv": as_csv, "json": as_json, "latex": as_latex}


def check_lps(requested: Sequence[str] | None, available: Mapping[str, object] | Iterable[str]) -> list[str]:
    """The language pairs to run: those asked for (each must exist), else every available one, sorted."""
    have = sorted(available)
    if not requested:
        return have
    missing = [lp for lp in requested if lp not in have]
    if missing:
        raise TaskSetError(f"language pair {', '.join(missing)} not found (there are: {', '.join(have) or 'none'})")
    return sorted(set(requested))
