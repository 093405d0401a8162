"""Every statistic of ``exports.metaeval.statistics`` for D directions x M metrics against Google's
mt-metrics-eval's own functions on the same data, in the same run (a benchmark script, not a timed test).

    .venv/bin/python perf/bench_metaeval_statistics.py --mtme /tmp/mt-metrics-eval \
        [--directions 9] [--metrics 10] [--triplets 612] [--resamples 1000] [--platform-only]

mt-metrics-eval is imported from the checkout (numpy and scipy only; ``apache_beam``, imported by ``data.py`` for
its parallel mode, and ``dacite``, for rating files, are given empty modules). Per direction, synthetic
triplets (levels k = 0..5, metric = 80 - 3k + noise of growing width) and 12 pseudo systems of 20 triplets:

- triplet level: Pearson, Spearman, Kendall τ_b of every metric (``stats.Correlation``), a bootstrap interval of
  Pearson per metric (``stats.Correlation.Pearson`` on each resample: mt-metrics-eval has no bootstrap), the
  permutation clusters of Pearson (``data.CompareMetrics``, k resamples);
- system level: Pearson and pairwise accuracy per metric, soft pairwise accuracy (``PairwiseConfidenceError``),
  the clusters of pooled accuracy (``data.CompareMetricsWithGlobalAccuracy`` over all directions' EvalSets is
  replaced by ``data.ComputeSigMatrix`` over the same vectors, the function it calls). Soft pairwise accuracy
  uses 1,000 permutations, the fixed number of ``PairwiseConfidenceError``.

Both sides use the same seeds; the script checks that the values, p-values and clusters agree and prints the
seconds of each side and their ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exports.metaeval import statistics


def make_direction(rng, metrics: int, triplets: int):
    levels = np.arange(triplets) % 6
    gold = -5.0 * levels
    scores = {f"m{i:02d}": np.round(80 - 3 * levels + rng.normal(0, 2 + 0.3 * i, triplets), 2) for i in range(metrics)}
    systems = [rng.choice(np.flatnonzero(levels == k), 20, replace=False) for k in range(6) for _ in range(2)]
    return gold, scores, systems


def ours(data, resamples: int, seed: int) -> dict:
    out = {}
    for d, (gold, scores, systems) in enumerate(data):
        row = {
            m: [statistics.STATISTICS[s].compute(gold, v)[0] for s in ("pearson", "spearman", "kendall-b")]
            for m, v in scores.items()
        }
        ci = {
            m: statistics.bootstrap_interval("pearson", gold, v, resamples=resamples, seed=seed)
            for m, v in scores.items()
        }
        sig = statistics.permutation_significance("pearson", gold, scores, resamples=resamples, seed=seed)
        sys_gold = np.array([gold[s].mean() for s in systems])
        sys_scores = {m: np.array([v[s].mean() for s in systems]) for m, v in scores.items()}
        sys_row = {
            m: (statistics.pearson(sys_gold, v)[0], statistics.accuracy(sys_gold, v)[0]) for m, v in sys_scores.items()
        }
        gold_seg = np.array([gold[s] for s in systems])
        spa = {
            m: statistics.soft_pairwise_accuracy(gold_seg, np.array([v[s] for s in systems])) for m, v in scores.items()
        }
        acc_sig = statistics.permutation_significance("accuracy", sys_gold, sys_scores, resamples=resamples, seed=seed)
        out[d] = (
            row,
            {m: (c.low, c.high) for m, c in ci.items()},
            sig.metrics,
            sig.ranks,
            sig.p_values,
            sys_row,
            spa,
            acc_sig.metrics,
            acc_sig.ranks,
        )
    return out


def reference(data, resamples: int, seed: int, mtme) -> dict:
    import scipy.stats

    data_mod, stats = mtme
    out = {}
    for d, (gold, scores, systems) in enumerate(data):
        corr = {m: stats.Correlation(1, list(gold), list(v)) for m, v in scores.items()}
        row = {m: [c.Pearson()[0], c.Spearman()[0], c.Kendall()[0]] for m, c in corr.items()}
        idx = np.random.default_rng(seed).integers(0, len(gold), size=(resamples, len(gold)))
        ci = {}
        for m, v in scores.items():
            values = [stats.Correlation(1, list(gold[i]), list(v[i])).Pearson()[0] for i in idx]
            ci[m] = tuple(np.nanpercentile(values, [2.5, 97.5]))
        np.random.seed(seed)
        ranks, sig, _, _ = data_mod.CompareMetrics(corr, scipy.stats.pearsonr, "none", k=resamples)
        sys_gold = [gold[s].mean() for s in systems]
        sys_corr = {
            m: stats.Correlation(len(systems), sys_gold, [v[s].mean() for s in systems]) for m, v in scores.items()
        }
        sys_row = {}
        for m, c in sys_corr.items():
            agree, pairs = stats.Agreement(c.gold_scores, c.metric_scores)
            sys_row[m] = (c.Pearson()[0], agree / pairs)
        gold_flat = [x for s in systems for x in gold[s]]
        spa = {
            m: stats.Correlation(len(systems), gold_flat, [x for s in systems for x in v[s]]).PairwiseConfidenceError()[
                0
            ]
            for m, v in scores.items()
        }

        def accuracy(g, v):
            agree, pairs = stats.Agreement(g, v)
            return agree / pairs, pairs

        order = dict(
            sorted(
                ((m, [accuracy(c.gold_scores, c.metric_scores)[0], 0]) for m, c in sys_corr.items()),
                key=lambda x: (-x[1][0], x[0]),
            )
        )
        np.random.seed(seed)
        acc_sig, _, _ = data_mod.ComputeSigMatrix(
            sys_corr, order, accuracy, "none", resamples, stats.PermutationSigDiffParams(), False, "scores"
        )
        out[d] = (
            row,
            ci,
            list(ranks),
            [r[1] for r in ranks.values()],
            sig,
            sys_row,
            spa,
            list(order),
            data_mod.AssignRanks(acc_sig, 0.05),
        )
    return out


def agree(a: dict, b: dict) -> list[str]:
    problems = []
    for d, figures in a.items():
        (row, ci, order, ranks, p, sys_row, spa, acc_order, acc_ranks), ref = figures, b[d]
        for m in row:
            if not np.allclose(row[m], ref[0][m], atol=1e-12) or not np.allclose(ci[m], ref[1][m], atol=1e-12):
                problems.append(f"direction {d} {m}: triplet-level values or interval differ")
            if not np.allclose(sys_row[m], ref[5][m], atol=1e-12) or abs(spa[m] - ref[6][m]) > 1e-12:
                problems.append(f"direction {d} {m}: system-level values differ")
        if order != ref[2] or ranks != ref[3] or not np.array_equal(np.triu(p, 1), np.triu(ref[4], 1)):
            problems.append(f"direction {d}: Pearson clusters or p-values differ")
        if acc_order != ref[7] or acc_ranks != ref[8]:
            problems.append(f"direction {d}: accuracy clusters differ")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mtme", required=True, help="a checkout of google-research/mt-metrics-eval")
    parser.add_argument("--directions", type=int, default=9)
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--triplets", type=int, default=612, help="per direction (XQ-MEval: 102 per level x 6)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--platform-only",
        action="store_true",
        help="time the platform alone (mt-metrics-eval takes ~30x as long; its ratio is per direction)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.mtme).resolve()))
    for optional in ("apache_beam", "dacite"):  # beam: parallel mode; dacite: rating files; neither used here
        sys.modules.setdefault(optional, types.ModuleType(optional))
    from mt_metrics_eval import data as data_mod
    from mt_metrics_eval import stats

    rng = np.random.default_rng(args.seed)
    data = [make_direction(rng, args.metrics, args.triplets) for _ in range(args.directions)]
    start = time.perf_counter()
    mine = ours(data, args.resamples, args.seed)
    ours_s = time.perf_counter() - start
    print(f"platform: {ours_s:.1f} s", flush=True)
    if args.platform_only:
        return
    start = time.perf_counter()
    ref = reference(data, args.resamples, args.seed, (data_mod, stats))
    ref_s = time.perf_counter() - start
    problems = agree(mine, ref)
    print(
        f"{args.directions} directions x {args.metrics} metrics, {args.triplets} triplets each, "
        f"{args.resamples} resamples: platform {ours_s:.1f} s, mt-metrics-eval {ref_s:.1f} s, "
        f"ratio {ref_s / ours_s:.1f}x; {'same figures' if not problems else f'{len(problems)} differences'}"
    )
    for problem in problems[:20]:
        print(" ", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
