"""Tie-calibrated Kendall τ (acc23 with the best tie threshold, the WMT23 segment-level statistic):
``exports.metaeval.domain``'s exact sweep against an exhaustive search in the same run, and its absolute time at
larger n.

    .venv/bin/python perf/bench_metaeval.py [--sizes 100,200] [--large 612,2000] [--repeats 3]

The baseline scores every candidate threshold (0 and each distinct |Δmetric|) on its own with one
vectorised count over all pairs (``exports.metaeval._pair_counts``), as the previous implementation did
before it capped the candidates at 2,000 quantiles. Both must give the same value and ε; the script
fails if they do not. Scores are continuous metric scores (normal, 4 decimals) against six human levels
(−5·k), like a release direction. Times are wall-clock, best of ``--repeats`` (the exhaustive search runs
once).
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exports.metaeval.domain import _acc_23, _pair_counts, kendall_tau


def exhaustive(metric: np.ndarray, human: np.ndarray) -> tuple[float, float]:
    i, j = np.triu_indices(len(metric), k=1)
    best_value, best_eps = -np.inf, 0.0
    for eps in np.unique(np.concatenate([[0.0], np.abs(metric[i] - metric[j])])):
        value = _acc_23(_pair_counts(metric, human, float(eps)))
        if value > best_value:
            best_value, best_eps = value, float(eps)
    return best_value, best_eps


def case(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 6, n)
    metric = np.round(80 - 6 * levels + rng.normal(scale=8, size=n), 4)
    return metric, -5.0 * levels


def best_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,200", help="n for the comparison with the exhaustive search")
    parser.add_argument("--large", default="612,2000", help="n timed for the sweep alone")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for n in [int(x) for x in args.sizes.split(",") if x]:
        metric, human = case(n, n)
        t_sweep, ours = best_time(partial(kendall_tau, metric, human, "acc23", calibrate_ties=True), args.repeats)
        t_exh, (value, eps) = best_time(partial(exhaustive, metric, human), 1)
        if ours.value != value or ours.epsilon != eps:
            raise SystemExit(f"n={n}: sweep {ours.value}, ε={ours.epsilon} ≠ exhaustive {value}, ε={eps}")
        print(
            f"n={n}: sweep {t_sweep * 1000:.1f} ms, exhaustive {t_exh:.2f} s ({t_exh / t_sweep:.0f}× slower); acc23 {value:.4f}, ε {eps:g}, equal"
        )
    for n in [int(x) for x in args.large.split(",") if x]:
        metric, human = case(n, n)
        t_sweep, ours = best_time(partial(kendall_tau, metric, human, "acc23", calibrate_ties=True), args.repeats)
        print(f"n={n}: sweep {t_sweep:.3f} s ({n * (n - 1) // 2:,} pairs); acc23 {ours.value:.4f}, ε {ours.epsilon:g}")


if __name__ == "__main__":
    main()
