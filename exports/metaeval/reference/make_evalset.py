"""The EvalSet the reference fixtures are computed on, written by the platform's own exporter
(``exports.metaeval.evalset``) from a deterministic synthetic direction: 40 source segments x 6 levels
(k = 0..5) = 240 triplets, three metrics of differing quality (Gaussian noise of 3, 3.2 and 5 points around
80 - 3k, rounded to 0.1 so that metric ties occur), and 12 monolingual pseudo systems (2 repetitions x 6
levels, 20 triplets each).

    .venv/bin/python -m exports.metaeval.reference.make_evalset OUT_ROOT

``tests/exports/metaeval/test_metaeval_reference.py`` rebuilds it and checks that it equals the committed copy in
``tests/fixtures/mtme/`` byte for byte, so the fixtures are about what the exporter writes today.
"""

from __future__ import annotations

import sys

import numpy as np

from exports.metaeval import evalset

NAME, LP = "xqmeval-synthetic", "en-de"
METRIC_NOISE = {"noise3": 3.0, "noise3b": 3.2, "noise5": 5.0}


def synthetic() -> tuple[list[evalset.Triplet], list[evalset.System], dict[str, dict[str, float]]]:
    """The direction's triplets, pseudo systems and metric scores."""
    rng = np.random.default_rng(20261127)
    triplets = []
    for segment in range(40):
        for k in range(6):
            triplets.append(
                evalset.Triplet(
                    f"{LP}/{segment}/k{k}",
                    f"source {segment}",
                    f"reference {segment}",
                    f"translation {segment} with {k} errors",
                    k,
                )
            )
    scores = {}
    for metric, noise in METRIC_NOISE.items():
        # one decimal: ties in the metric as well as in the human scores
        scores[metric] = {t.id: round(float(80 - 3.0 * t.level + rng.normal(0, noise)), 1) for t in triplets}
    systems = []
    for repetition in range(2):
        for k in range(6):
            pool = [t.id for t in triplets if t.level == k]
            chosen = [pool[i] for i in sorted(rng.choice(len(pool), 20, replace=False))]
            systems.append(evalset.System(f"mono-r{repetition}-k{k}", -5.0 * k, chosen))
    return triplets, systems, scores


def build() -> evalset.EvalSet:
    return evalset.from_triplets(NAME, LP, *synthetic())


if __name__ == "__main__":
    print(evalset.write(build(), sys.argv[1]))
