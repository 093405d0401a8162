"""Tie-calibrated τ (``exports.metaeval.domain``) against Google's mt-metrics-eval itself, on random vectors.

    git clone https://github.com/google-research/mt-metrics-eval /tmp/mt-metrics-eval   # any checkout
    .venv/bin/python perf/check_tau_vs_mtme.py --mtme /tmp/mt-metrics-eval [--cases 400]

Imports the reference's ``mt_metrics_eval.tau_optimization`` from the checkout (it needs only numpy) and
runs ``tau_optimization`` over every pair (``sample_rate=1.0``, what ``KendallWithTiesOpt`` does with
``sample_rate=1.0``) for acc23 and τ_23, with None for missing values as it expects. n from 2 to 150,
ties on both sides, up to three missing values. Prints the number of mismatches in value or ε (exits 1
on any). mt-metrics-eval is not a dependency of the project (not on PyPI); the tests compare with an
exhaustive search instead (tests/exports/metaeval/test_domain.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exports.metaeval.domain import kendall_tau


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mtme", required=True, help="a checkout of google-research/mt-metrics-eval")
    parser.add_argument("--cases", type=int, default=400)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.mtme).resolve()))
    from mt_metrics_eval import tau_optimization

    rng = np.random.default_rng(0)
    compared = mismatches = 0
    for trial in range(args.cases):
        n = int(rng.integers(2, 151))
        if trial % 2:
            metric = list(rng.integers(0, int(rng.integers(2, 40)), n) / 7.0)
        else:
            metric = list(np.round(rng.normal(size=n), int(rng.integers(1, 4))))
        human = list(rng.integers(-5, 1, n) * 5.0)
        for _ in range(int(rng.integers(0, 4))):
            (metric if rng.random() < 0.5 else human)[int(rng.integers(0, n))] = None
        if sum(m is not None and h is not None for m, h in zip(metric, human)) < 2:
            continue
        for variant, fn in (
            ("acc23", tau_optimization.TauSufficientStats.acc_23),
            ("23", tau_optimization.TauSufficientStats.tau_23),
        ):
            ref = tau_optimization.tau_optimization(
                np.array(metric, dtype=object), np.array(human, dtype=object), fn, 1.0
            )
            ours = kendall_tau(metric, human, variant, calibrate_ties=True)
            compared += 1
            if abs(ref.best_tau - ours.value) > 1e-12 or ref.best_threshold != ours.epsilon:
                mismatches += 1
                print(
                    f"n={n} {variant}: reference {ref.best_tau} at ε={ref.best_threshold}, ours {ours.value} at ε={ours.epsilon}"
                )
    print(f"compared {compared} (value and ε), mismatches {mismatches}")
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
