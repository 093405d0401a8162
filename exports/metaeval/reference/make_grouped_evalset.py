"""The EvalSet the grouping fixtures are computed on (``tests/fixtures/mtme-grouped/``): a WMT-like direction written
by the platform's own writer (``exports.metaeval.evalset.write``) from deterministic synthetic data. 6 systems and a
human translation (``refB``, left out as ``include_human=False`` leaves it) × 40 segments; MQM-like human scores
(0, −1, −5, … with many ties) with some ``None``; one segment whose human scores are all equal (a NaN for Pearson and
τ there) and one system whose human scores are all equal (the same under ``average_by='sys'``); four metrics:
``good``, ``fair``, ``coarse`` (rounded to whole points: ties within items) and ``flat`` (one value for a whole
segment now and then: NaN per item).

    .venv/bin/python -m exports.metaeval.reference.make_grouped_evalset tests/fixtures/mtme-grouped

``exports/metaeval/reference/make_grouped_fixtures.py`` computes the expected figures with mt-metrics-eval.
"""

from __future__ import annotations

import sys

import numpy as np

from exports.metaeval import evalset

NAME, LP, GOLD, REF = "xqmeval-grouped", "en-de", "mqm", "refA"
SYSTEMS = ["sysA", "sysB", "sysC", "sysD", "sysE", "sysF"]
HUMAN = "refB"
SEGMENTS = 40
CONSTANT_SEGMENT = 7  # every system's human score equal here
CONSTANT_SYSTEM = "sysF"  # its human score equal everywhere (where present)
METRICS = ("good", "fair", "coarse", "flat")


def build() -> evalset.EvalSet:
    rng = np.random.default_rng(20261129)
    systems = [*SYSTEMS, HUMAN]
    quality = {s: 0.8 * i for i, s in enumerate(systems)}
    gold: dict[str, list[float | None]] = {}
    for s in systems:
        errors = rng.poisson(1.0 + quality[s], SEGMENTS)
        minor = rng.poisson(0.7, SEGMENTS)
        values: list[float | None] = [float(-5 * e - m) for e, m in zip(errors, minor)]
        if s == CONSTANT_SYSTEM:
            values = [-3.0] * SEGMENTS
        for k in rng.choice(SEGMENTS, 5, replace=False):
            if k != CONSTANT_SEGMENT:
                values[int(k)] = None
        values[CONSTANT_SEGMENT] = -2.0
        gold[s] = values
    latent = {s: [rng.normal(0, 2.0) if v is None else v for v in gold[s]] for s in systems}
    metrics = {}
    for name, noise in (("good", 2.0), ("fair", 4.0), ("coarse", 3.0), ("flat", 3.5)):
        scores = {}
        for s in systems:
            row = [round(float(v + rng.normal(0, noise)), 3) for v in latent[s]]
            if name == "coarse":
                row = [float(round(v)) for v in row]
            scores[s] = row
        if name == "flat":  # one score for every system of a few segments
            for k in (3, 11, 29):
                for s in systems:
                    scores[s][k] = -4.0
        metrics[(f"{name}-{REF}", "seg")] = scores
        metrics[(f"{name}-{REF}", "sys")] = {s: [float(np.mean(v))] for s, v in scores.items()}
    sys_gold = {s: [float(np.mean([v for v in gold[s] if v is not None]))] for s in systems}
    sources = [f"source {k}" for k in range(SEGMENTS)]
    outputs = {s: [f"{s} translation {k}" for k in range(SEGMENTS)] for s in systems}
    return evalset.EvalSet(
        NAME,
        LP,
        sources,
        {REF: [f"reference {k}" for k in range(SEGMENTS)], HUMAN: outputs[HUMAN]},
        outputs,
        [("news", f"doc{k // 10}") for k in range(SEGMENTS)],
        {(GOLD, "seg"): gold, (GOLD, "sys"): sys_gold},
        metrics,
    )


if __name__ == "__main__":
    print(evalset.write(build(), sys.argv[1]))
