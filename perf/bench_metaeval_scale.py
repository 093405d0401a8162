"""The O(n log n) statistics and the vectorised permutation tests (issue #45) at WMT size, against the O(n²) code
they replaced and against mt-metrics-eval's own functions, in one run (a benchmark script, not a timed test).

    /tmp/mtme-venv/bin/python perf/bench_metaeval_scale.py --mtme /tmp/mt-metrics-eval \
        [--systems 15] [--segments 1500] [--resamples 1000] [--seed 0]

Run it with the throwaway virtualenv of ``exports/metaeval/reference/make_grouped_fixtures.py`` (numpy and scipy;
``exports.metaeval.statistics`` needs nothing else): mt-metrics-eval is imported from the checkout there, never
into the platform's environment. Without ``--mtme`` only the platform and the old code run.

Synthetic WMT-like data: S systems × N segments, MQM-like human scores (0, −1, −5, … : many ties), two metrics
(human score + noise, rounded to 0.01). It measures, each side on the same data and seed:

1. Kendall τ_b and pairwise accuracy over all S·N items (``average_by='none'``): one value with the new code, and
   the permutation test of one metric pair (k resamples). The old code (its pair-sign arrays, copied below from
   the tree before #45) is O(n²) in time and memory (its index arrays alone are 16 bytes a pair: 4 GB at
   n = 22,500), so it runs on 1,500, 3,000 and 4,500 items and its time per evaluation is extrapolated as c·n²
   (the fit is printed). mt-metrics-eval's τ_b test (``PermutationSigDiff`` with ``scipy.stats.kendalltau``,
   also O(n log n)) runs in full.
2. The WMT24 segment-level statistic: ``KendallWithTiesOpt`` (acc23, sample_rate 1) averaged by item, and the
   pairs test of one metric pair (``PairwisePermutationSigDiff``), the platform's in full, mt-metrics-eval's on
   ``--mtme-resamples`` resamples, extrapolated linearly (each resample costs the same). The p-values over those
   first resamples are checked equal.
3. Memory: the peak of numpy's allocations (``tracemalloc``) of the τ_b test at k/10 and at k resamples.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exports.metaeval import statistics


# ---- the code before #45 (exports/metaeval/statistics.py at 5abe07d): pair-sign arrays, O(n²) ----------------
def _old_pairwise(gold, metric, reduce):
    g, m = np.broadcast_arrays(np.atleast_2d(gold), np.atleast_2d(metric))
    i, j = np.triu_indices(g.shape[1], k=1)
    step = max(1, 4_000_000 // max(len(i), 1))
    out = np.empty(g.shape[0])
    for start in range(0, g.shape[0], step):
        rows = slice(start, start + step)
        out[rows] = reduce(np.sign(g[rows, i] - g[rows, j]), np.sign(m[rows, i] - m[rows, j]))
    return out


def old_kendall_b(gold, metric):
    def reduce(sg, sm):
        return np.sum(sg * sm, axis=1) / np.sqrt(np.sum(sg != 0, axis=1) * np.sum(sm != 0, axis=1))

    return _old_pairwise(gold, metric, reduce)


def old_accuracy(gold, metric):
    n = np.atleast_2d(gold).shape[1]
    return _old_pairwise(gold, metric, lambda sg, sm: np.sum(sg == sm, axis=1)) / (n * (n - 1) // 2)


def make_data(systems: int, segments: int, seed: int):
    rng = np.random.default_rng(seed)
    quality = np.linspace(0, 2, systems)[:, None]
    gold = -(5.0 * rng.poisson(0.6 + quality, (systems, segments)) + rng.poisson(0.8, (systems, segments)))
    metrics = {
        "good": np.round(gold + rng.normal(0, 2.0, gold.shape), 2),
        "fair": np.round(gold + rng.normal(0, 3.0, gold.shape), 2),
    }
    return gold, metrics


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def old_per_evaluation(name: str, fn, gold_flat, metric_flat, sizes=(1500, 3000, 4500)) -> tuple[float, float]:
    """Seconds per evaluation of the old code at the full size, extrapolated as c·n² from ``sizes``."""
    points = []
    for n in sizes:
        _, seconds = timed(fn, gold_flat[:n], metric_flat[:n])
        points.append((n, seconds))
    c = sum(s * n * n for n, s in points) / sum(n**4 for n, _ in points)  # least squares for s = c·n²
    full = len(gold_flat)
    print(
        f"  old {name}: "
        + ", ".join(f"n={n:,} {s:.3f} s" for n, s in points)
        + f"; fit c·n², n={full:,}: {c * full * full:.1f} s"
    )
    return c * full * full, c


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mtme", help="a checkout of google-research/mt-metrics-eval (run in its virtualenv)")
    parser.add_argument("--systems", type=int, default=15)
    parser.add_argument("--segments", type=int, default=1500)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--mtme-resamples", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    k = args.resamples
    gold, metrics = make_data(args.systems, args.segments, args.seed)
    flat = statistics.group_scores(gold, metrics, "none")
    items = statistics.group_scores(gold, metrics, "item")
    n = len(flat.gold)
    print(f"{args.systems} systems x {args.segments} segments = {n:,} items; {k} resamples; numpy {np.__version__}")
    failures = []
    # scipy's first kendalltau at full size loads what it needs (seconds on a loaded machine): outside the timings
    statistics.kendall_b(flat.gold, flat.metrics["fair"])

    print("1. ungrouped (average_by none)")
    rows = {}
    for name, new_fn, old_fn in (
        ("kendall-b", statistics.kendall_b, old_kendall_b),
        ("accuracy", statistics.accuracy, old_accuracy),
    ):
        value, new_seconds = timed(new_fn, flat.gold, flat.metrics["good"])
        check = old_fn(flat.gold[:3000], flat.metrics["good"][:3000])[0]
        if abs(new_fn(flat.gold[:3000], flat.metrics["good"][:3000])[0] - check) > 1e-12:
            failures.append(f"{name}: new and old code differ at n = 3,000")
        old_seconds, _ = old_per_evaluation(name, old_fn, flat.gold, flat.metrics["good"])
        sig, test_seconds = timed(
            statistics.permutation_significance, name, flat.gold, flat.metrics, resamples=k, seed=args.seed
        )
        # the old test evaluated the statistic on 2 hybrids per resample plus the 2 observed values
        old_test = old_seconds * (2 * k + 4)
        rows[name] = (new_seconds, old_seconds, test_seconds, old_test)
        if name == "kendall-b":
            sig_tau = sig
        print(
            f"  {name}: value {value[0]:.6f} in {new_seconds:.3f} s (old, extrapolated: {old_seconds:.1f} s, "
            f"{old_seconds / new_seconds:,.0f}x); permutation test of 1 pair, {k} resamples: {test_seconds:.1f} s "
            f"(old, extrapolated: {old_test / 3600:.1f} h, {old_test / test_seconds:,.0f}x); p = {sig.p_values[0, 1]}"
        )

    print("2. WMT24 segment level: acc23-tc averaged by item, pairs test")
    values, calibration_seconds = timed(
        lambda: {m: statistics.tie_calibration(items.gold, v, items.bounds) for m, v in items.metrics.items()}
    )
    sig, pairs_seconds = timed(
        statistics.permutation_significance,
        "acc23-tc",
        items.gold,
        items.metrics,
        items.bounds,
        resamples=k,
        seed=args.seed,
    )
    print(
        f"  calibration of 2 metrics: {calibration_seconds:.2f} s; pairs test of 1 pair, {k} resamples: "
        f"{pairs_seconds:.2f} s; values {[round(c.value, 6) for c in values.values()]}, p = {sig.p_values[0, 1]}"
    )

    print("3. memory of the tau_b test (numpy's allocations, tracemalloc peak)")
    for resamples in (max(1, k // 10), k):
        tracemalloc.start()
        statistics.permutation_significance("kendall-b", flat.gold, flat.metrics, resamples=resamples, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"  {resamples} resamples: peak {peak / 2**20:.1f} MiB")

    if args.mtme:
        sys.path.insert(0, str(Path(args.mtme).resolve()))
        sys.modules.setdefault("apache_beam", types.ModuleType("apache_beam"))
        import scipy.stats
        from mt_metrics_eval import stats

        print("4. mt-metrics-eval's own functions on the same data")
        corr = {m: stats.Correlation(args.systems, list(gold.ravel()), list(v.ravel())) for m, v in metrics.items()}
        np.random.seed(args.seed)
        (p, _, _, _), seconds = timed(
            stats.PermutationSigDiff, corr["fair"], corr["good"], scipy.stats.kendalltau, "none", k
        )
        if p != sig_tau.p_values[0, 1]:
            failures.append(f"tau_b test: p {p} there, {sig_tau.p_values[0, 1]} here")
        print(
            f"  tau_b permutation test, 1 pair, {k} resamples: {seconds:.1f} s (platform {rows['kendall-b'][2]:.1f} s, {seconds / rows['kendall-b'][2]:.1f}x); p = {p}"
        )
        (value, epsilon, _), seconds = timed(
            stats.KendallWithTiesOpt,
            corr["good"].gold_scores,
            corr["good"].metric_scores,
            "acc23",
            args.systems,
            "item",
            1.0,
        )
        ours = values["good"]
        if abs(value - ours.value) > 1e-12 or epsilon != ours.epsilon:
            failures.append(f"KendallWithTiesOpt: {value}, {epsilon} there, {ours.value}, {ours.epsilon} here")
        print(f"  KendallWithTiesOpt item, 1 metric: {seconds:.2f} s (platform {calibration_seconds / 2:.2f} s)")
        m = args.mtme_resamples
        np.random.seed(args.seed)
        (p_ref, _, used, _), seconds = timed(
            stats.PairwisePermutationSigDiff, corr["fair"], corr["good"], "acc23", "item", m, sample_rate=1.0
        )
        mine = statistics.permutation_significance(
            "acc23-tc", items.gold, items.metrics, items.bounds, resamples=m, seed=args.seed
        )
        if mine.p_values[0, 1] != p_ref:
            failures.append(f"pairs test over {m} resamples: p {p_ref} there, {mine.p_values[0, 1]} here")
        extrapolated = seconds / m * k
        print(
            f"  pairs test, 1 pair: {seconds:.1f} s for {m} resamples (p = {p_ref}, the same here), "
            f"{extrapolated / 60:.1f} min for {k} extrapolated; platform {pairs_seconds:.2f} s, "
            f"{extrapolated / pairs_seconds:,.0f}x"
        )
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
