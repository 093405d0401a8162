"""The WMT24 task set run by the platform (``exports.metaeval.tasksets``) and by Google's mt-metrics-eval
(``tasks.WMT24(...).Run()``, in its throwaway virtualenv) side by side on the same synthetic EvalSet, in one run:
checks that the tables agree and prints the seconds of each side and their ratio, wall-clock and CPU (the CPU
time is the fairer figure on a shared machine whose load changes between the two halves; a benchmark script, not a
timed test).

    .venv/bin/python perf/bench_tasksets.py --mtme /tmp/mt-metrics-eval --mtme-python /tmp/mtme-venv/bin/python \
        [--systems 15] [--segments 1500] [--metrics 20] [--k 1000] [--seed 0] [--platform-only]

The EvalSet is ``exports.metaeval.reference.make_taskset_evalset`` at the size asked for (WMT24's three language
pairs; by default WMT size: 15 systems, 1,500 segments, 20 metrics), written to a temporary folder. The
mt-metrics-eval side is ``exports/metaeval/reference/make_taskset_fixtures.py`` run with ``PYTHONHASHSEED=0`` (its
seconds are those of ``TaskSet.Run`` alone, as here those of ``tasksets.run``; reading the files is left out on both
sides). The platform flattens the systems in the order mt-metrics-eval used (a set's order; the script reads it
back from the reference's output), so the p-values are the same draws. Every metric but ``extra`` is primary (``--metrics`` counts the primary ones; never fewer than the fixture's four: good, fair, poor and qe).
``OPENBLAS_NUM_THREADS=1`` in the environment holds both sides to one BLAS thread (PCE's small float32 products
otherwise run on threads that spin on a loaded machine and inflate the CPU time); the tables are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from exports.metaeval import evalset, tasksets  # noqa: E402
from exports.metaeval.reference import make_taskset_evalset  # noqa: E402


def platform(root: str, lps: list[str], primary: set[str], k: int, seed: int, order: dict | None):
    loaded = {lp: evalset.read(root, make_taskset_evalset.NAME, lp) for lp in lps}

    def scores_of(task):
        std = tasksets.standard("wmt24", task.lang)
        return tasksets.evalset_scores(
            loaded[task.lang],
            task,
            ref=std.ref,
            gold=std.gold,
            outliers=std.outliers,
            primary=primary,
            system_order=order[task.lang] if order else None,
        )

    started, cpu = time.perf_counter(), time.process_time()
    result = tasksets.run(tasksets.wmt24(lps, k=k), scores_of, seed=seed)
    return result, time.perf_counter() - started, time.process_time() - cpu


def compare(result: tasksets.TaskSetResult, reference: dict) -> list[str]:
    problems = []
    for got, want in zip(result.results, reference["tasks"], strict=True):
        name = f"{got.task.lang} {got.task.level} {got.task.corr_fcn}"
        if got.metrics != list(want["corr_ranks"]):
            problems.append(f"{name}: order {got.metrics} != {list(want['corr_ranks'])}")
        for metric, (value, rank) in want["corr_ranks"].items():
            mine = got.corr_ranks.get(metric)
            if mine is None or abs(mine[0] - value) > 1e-9 or mine[1] != rank:
                problems.append(f"{name} {metric}: {mine} != {(value, rank)}")
        for i, row in enumerate(want["p_values"]):
            for j in range(i + 1, len(row)):
                if abs(got.p_values[i][j] - row[j]) > 1e-12:
                    problems.append(f"{name}: p[{i},{j}] {got.p_values[i][j]} != {row[j]}")
    for mine, theirs, label in (
        (result.average_ranks(), reference["average_ranks"], "average ranks"),
        (result.average_corrs(), reference["average_corrs"], "average corrs"),
    ):
        if list(mine) != list(theirs) or any(abs(mine[m] - theirs[m]) > 1e-9 for m in theirs):
            problems.append(f"{label}: {mine} != {theirs}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mtme", help="a checkout of google-research/mt-metrics-eval")
    parser.add_argument("--mtme-python", help="the python of a throwaway venv with numpy, scipy (and mt-metrics-eval)")
    parser.add_argument("--systems", type=int, default=15)
    parser.add_argument("--segments", type=int, default=1500)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--k", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--platform-only", action="store_true")
    args = parser.parse_args()
    lps = sorted(make_taskset_evalset.LPS)
    with tempfile.TemporaryDirectory(prefix="bench-tasksets-") as root:
        # one more than asked: "extra" is not primary; en-de's "base-refA" uses the non-standard reference
        evalsets = make_taskset_evalset.build(args.systems, args.segments, args.metrics + 1)
        for evs in evalsets:
            evalset.write(evs, root)
        bases = {key.rpartition("-")[0] for key, level in evalsets[1].metrics if level == "seg"}
        primary = sorted(bases - {"extra"})
        print(
            f"{len(lps)} language pairs x {args.systems} systems (+ human outputs) x {args.segments} segments x "
            f"{len(primary)} metrics, k = {args.k}, seed {args.seed}"
        )
        reference = None
        if not args.platform_only:
            if not (args.mtme and args.mtme_python):
                parser.error("--mtme and --mtme-python (or --platform-only)")
            command = [
                args.mtme_python,
                str(HERE / "exports/metaeval/reference/make_taskset_fixtures.py"),
                "--mtme",
                args.mtme,
                "--root",
                root,
                "--k",
                str(args.k),
                "--seed",
                str(args.seed),
                "--primary",
                ",".join(primary),
            ]
            out = subprocess.run(
                command, check=True, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"}
            )
            reference = json.loads(out.stdout)
            print(f"mt-metrics-eval TaskSet.Run: {reference['seconds']:.2f} s, CPU {reference['cpu_seconds']:.2f} s")
        result, seconds, cpu = platform(
            root, lps, set(primary), args.k, args.seed, reference["system_order"] if reference else None
        )
        print(f"platform tasksets.run: {seconds:.2f} s, CPU {cpu:.2f} s")
        print(tasksets.as_text(result.as_dict()))
        if reference is not None:
            problems = compare(result, reference)
            for line in problems[:20]:
                print("DIFFERS:", line)
            print("tables agree" if not problems else f"{len(problems)} differences")
            print(
                f"ratio (mt-metrics-eval / platform): {reference['seconds'] / seconds:.1f}x wall, "
                f"{reference['cpu_seconds'] / cpu:.1f}x CPU"
            )
            if problems:
                sys.exit(1)


if __name__ == "__main__":
    main()
