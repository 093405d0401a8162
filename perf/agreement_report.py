"""How long the agreement report takes at XQ-MEval scale, and what the bootstrap and the cache cost.

Synthetic stored-row tuples (no database): 9 languages × 816 candidates × 2 reviewers in round 1, a
200-candidate round 2 per language, 5% gold items, and 400 Likert items × 2 raters. Reports, as ratios
against the point-estimate-only baseline (1 resample) measured in the same run:

- the full report with the configured bootstrap (default 1000 resamples),
- a cache hit: hashing the loaded rows into the cache key (what a dashboard reload pays besides the query);

and, for one language (round 1 and 2 units, gold left out), the vectorised bootstrap of Krippendorff's α against calling the
``krippendorff`` package once per resample; and, for the error-type rows over every language (what the
report's "all languages" rows compute), α with its interval from a reviewers × units matrix (as the
report did) against from each unit's decisions (as it does), in time and peak memory (``tracemalloc``),
at ``--languages`` languages with two reviewers of their own each (a 200-language campaign: 400).

Run: ``.venv/bin/python perf/agreement_report.py [--resamples 1000] [--languages 200]``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
import django

django.setup()

from annotation.agreement.domain.report import DecisionRow, RatingRow, compute_report  # noqa: E402

LANGS = ["de", "es", "fr", "id", "ja", "lo", "si", "vi", "zh"]
TYPES = ["Addition", "Mistranslation", "Omission", "Untranslated"]


def synthetic(seed: int = 0, langs: list[str] = LANGS) -> tuple[list[DecisionRow], list[RatingRow]]:
    rng = random.Random(seed)
    decisions, ratings = [], []
    cid = 0
    for li, lang in enumerate(langs):
        reviewers = [(100 + 2 * li, f"r{li}a"), (101 + 2 * li, f"r{li}b")]
        for i in range(816):
            cid += 1
            gold = i % 20 == 0
            truth = "accept" if rng.random() < 0.94 else "reject"
            rounds = [1, 2] if i < 200 else [1]
            for number in rounds:
                for rid, name in reviewers:
                    d = truth if rng.random() < 0.95 else ("reject" if truth == "accept" else "accept")
                    decisions.append(
                        DecisionRow(
                            cid,
                            lang,
                            TYPES[i % 4],
                            gold,
                            truth if gold else "",
                            rid,
                            name,
                            number,
                            d,
                            "annotator",
                            rng.randint(2000, 30000),
                        )
                    )
    for item in range(400):
        lang = LANGS[item % len(LANGS)]
        base = [rng.randint(2, 5) for _ in range(4)]
        for rater in (1, 2):
            scores = tuple(min(5, max(1, b + rng.choice([-1, 0, 0, 1]))) for b in base)
            ratings.append(
                RatingRow(item, "pseudo_translation", lang, str(item), rater, f"rater{rater}", scores, 15000)
            )
    return decisions, ratings


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument(
        "--languages", type=int, default=0, help="also time α over every language of this many (0: skip)"
    )
    args = parser.parse_args()
    decisions, ratings = synthetic()
    print(f"rows: {len(decisions)} decisions, {len(ratings)} ratings")
    base = timed(
        lambda: compute_report(decisions, ratings, private=True, resamples=1, seed=0, confidence=0.95), repeat=3
    )
    full = timed(
        lambda: compute_report(decisions, ratings, private=True, resamples=args.resamples, seed=0, confidence=0.95)
    )
    hit = timed(lambda: hashlib.sha256(repr((decisions, ratings)).encode()).hexdigest(), repeat=3)
    print(f"point estimates only (baseline): {base:.2f} s")
    print(f"with {args.resamples} bootstrap resamples: {full:.2f} s  ({full / base:.1f}× baseline)")
    print(f"cache key of the loaded rows: {hit * 1000:.0f} ms  ({hit / full:.4f}× the full report)")

    from annotation.agreement.domain import statistics as ag

    de = [d for d in decisions if d.language == "de" and not d.is_gold]
    reviewers = sorted({d.reviewer for d in de})
    units: dict = {}
    for d in de:
        units.setdefault((d.candidate, d.round_number), {})[d.reviewer] = d.decision
    keys = sorted(units)
    matrix = [[units[k].get(r) for k in keys] for r in reviewers]
    n = 200
    fast = timed(lambda: ag.krippendorff_alpha_ci(matrix, "nominal", resamples=n, seed=0), repeat=3)
    columns = [c for c in zip(*matrix) if sum(x is not None for x in c) >= 2]
    slow = timed(
        lambda: ag.bootstrap_ci(
            columns, lambda cols: ag.krippendorff_alpha([list(r) for r in zip(*cols)], "nominal"), resamples=n, seed=0
        )
    )
    print(
        f"α bootstrap, {len(keys)} units, {n} resamples: package per resample {slow:.2f} s, vectorised {fast * 1000:.0f} ms ({slow / fast:.0f}× faster)"
    )
    if args.languages:
        all_languages(args.languages, n)


def all_languages(count: int, resamples: int) -> None:
    import tracemalloc

    from annotation.agreement.domain import statistics as ag

    decisions, _ = synthetic(langs=[f"l{i:03d}" for i in range(count)])
    rows = [d for d in decisions if d.error_type == TYPES[0] and not d.is_gold]
    units: dict = {}
    for d in rows:
        units.setdefault((d.candidate, d.round_number), {})[d.reviewer] = d.decision
    keys = sorted(units)
    reviewers = sorted({d.reviewer for d in rows})

    def from_matrix():
        matrix = [[units[k].get(r) for k in keys] for r in reviewers]
        return ag.krippendorff_alpha_ci(matrix, "nominal", ["accept", "reject"], resamples=resamples, seed=0)

    def from_units():
        return ag.krippendorff_alpha_units_ci(
            [list(units[k].values()) for k in keys], "nominal", ["accept", "reject"], resamples=resamples, seed=0
        )

    figures = {}
    for name, fn in (("matrix", from_matrix), ("units", from_units)):
        tracemalloc.start()
        start = time.perf_counter()
        result = fn()
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        figures[name] = (result, seconds, peak)
    assert figures["matrix"][0] == figures["units"][0], "the two must give the same interval"
    (ms, mm), (us, um) = figures["matrix"][1:], figures["units"][1:]
    print(
        f"α over {count} languages, one error type ({len(keys):,} units, {len(reviewers)} reviewers, {resamples} resamples): "
        f"matrix {ms:.2f} s, peak {mm:.0f} MB; per unit {us:.2f} s, peak {um:.0f} MB "
        f"({ms / us:.1f}× faster, {mm / um:.1f}× less memory; same interval)"
    )


if __name__ == "__main__":
    main()
