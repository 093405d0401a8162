"""The EvalSet with people's scores and error spans (ESA and MQM) that the round-trip fixtures are computed on,
written by the platform's exporter (``exports.metaeval.evalset.from_triplets`` with ``human_ratings``) from the
synthetic direction of ``make_evalset`` (240 triplets, three metrics, 12 pseudo systems) and deterministic
synthetic annotations:

- ESA: 85 % of the triplets rated, by one rater (or two, 30 %) of four; one span per injected error, minor or
  major, now and then a source span (an omission); the score 100 − 14k plus Gaussian noise of 8, clipped to
  0–100 and rounded;
- MQM: 80 % rated by one or two of three raters, spans with a category and a severity (critical now and then),
  the score the span room's MQM rule gives those severities (``annotation.spans.domain.mqm_score``).

    .venv/bin/python -m exports.metaeval.reference.make_esa_evalset tests/fixtures/mtme-esa

``tests/exports/metaeval/test_esa_roundtrip.py`` rebuilds it and checks that it equals the committed copy byte for byte;
``make_esa_fixtures.py`` is what mt-metrics-eval computes on it.
"""

from __future__ import annotations

import sys

import numpy as np

from exports.metaeval import evalset
from exports.metaeval.reference import make_evalset

NAME, LP = "xqmeval-esa", make_evalset.LP
CATEGORIES = ("accuracy/mistranslation", "accuracy/omission", "fluency/grammar", "style/awkward")


def mqm_score(severities: list[str]) -> float:
    from annotation.spans.domain import mqm_score as rule

    return float(rule(severities))


def _spans(rng, t: evalset.Triplet, protocol: str) -> list[evalset.RatingError]:
    errors = []
    for _ in range(t.level + int(rng.random() < 0.2)):  # now and then a span where nothing was injected
        source = rng.random() < 0.1
        text = t.source if source else t.translation
        start = int(rng.integers(0, len(text) - 1))
        end = min(len(text), start + int(rng.integers(1, 6)))
        if protocol == "esa":
            severity, category = str(rng.choice(["minor", "major"])), None
        else:
            severity = str(rng.choice(["minor", "major", "critical"], p=[0.5, 0.45, 0.05]))
            category = "accuracy/omission" if source else str(rng.choice(CATEGORIES))
        errors.append(evalset.RatingError(start, end, severity, category, None, bool(source)))
    return errors


def ratings(triplets: list[evalset.Triplet]) -> dict[str, list[evalset.HumanRating]]:
    rng = np.random.default_rng(20261129)
    out: dict[str, list[evalset.HumanRating]] = {"esa": [], "mqm": []}
    for protocol, share, pool in (
        ("esa", 0.85, ["ann1", "ann2", "ann3", "ann4"]),
        ("mqm", 0.8, ["mqm1", "mqm2", "mqm3"]),
    ):
        for t in triplets:
            if rng.random() >= share:
                continue
            raters = sorted(rng.choice(pool, 2 if rng.random() < 0.3 else 1, replace=False).tolist())
            for rater in raters:
                errors = _spans(rng, t, protocol)
                if protocol == "esa":
                    score = float(np.clip(round(100 - 14 * t.level + rng.normal(0, 8)), 0, 100))
                else:
                    score = mqm_score([e.severity for e in errors if e.severity])
                out[protocol].append(evalset.HumanRating(t.id, rater, score, errors))
    return out


def build() -> evalset.EvalSet:
    triplets, systems, scores = make_evalset.synthetic()
    return evalset.from_triplets(NAME, LP, triplets, systems, scores, ratings(triplets))


if __name__ == "__main__":
    print(evalset.write(build(), sys.argv[1]))
