"""How long a direction's span agreement (``annotation.agreement.domain.spans.report``) takes at WMT size, as
ratios against baselines measured in the same run.

Synthetic direction (no database): ``--items`` translations (default 15,000: a WMT24 ESA direction's ~1,500
segments × 10 systems), two annotators each, translations of 80–250 and sources of 60–200 characters, 0–3
spans per annotation, a 0–100 score, one injected error per item. Reports:

- the full report with ``--resamples`` bootstrap resamples (what the agreement page computes on a miss),
  against the point estimates alone (1 resample), the baseline;
- on ``--subset`` items, Krippendorff's α on the character labels as the module computes it (coincidences
  summed per item) against the ``krippendorff`` package on the raters × characters matrix.

Run: ``.venv/bin/python perf/bench_span_agreement.py [--items 15000] [--resamples 1000] [--subset 2000]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from annotation.agreement.domain import spans as sp


def campaign(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    items, annotations = [], []
    for i in range(n):
        mt = int(rng.integers(80, 251))
        items.append(sp.Item(i, mt, int(rng.integers(60, 201)), injected=[(5, 12)], errors=1))
        for a in range(2):
            spans = []
            for _ in range(int(rng.integers(0, 4))):
                start = int(rng.integers(0, mt - 10))
                severity = "minor" if rng.random() < 0.6 else "major"
                spans.append(sp.Span(start, start + int(rng.integers(1, 10)), severity))
            annotations.append(sp.Annotation(i, a, spans, float(rng.integers(0, 101))))
    return items, annotations


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=15_000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--subset", type=int, default=2000)
    args = parser.parse_args()
    items, annotations = campaign(args.items)
    chars = sum(2 * (it.mt_length + it.src_length) for it in items)
    base = timed(lambda: sp.report(items, annotations, resamples=1))
    full = timed(lambda: sp.report(items, annotations, resamples=args.resamples))
    print(f"{args.items:,} items, 2 annotators, {chars:,} annotated characters")
    print(f"  point estimates (1 resample): {base:.2f} s")
    print(f"  full report ({args.resamples} resamples): {full:.2f} s = {full / base:.2f} x the point estimates")

    import krippendorff

    items, annotations = items[: args.subset], annotations[: 2 * args.subset]
    width = sum(it.mt_length + it.src_length for it in items)
    data = np.full((2, width), np.nan)

    def package() -> float:
        offset = 0
        for it, (a, b) in zip(items, zip(annotations[::2], annotations[1::2])):
            length = it.mt_length + it.src_length
            data[0, offset : offset + length] = sp.character_labels(it, a.spans)
            data[1, offset : offset + length] = sp.character_labels(it, b.spans)
            offset += length
        return krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")

    ours = timed(lambda: sp.character_alpha(items, annotations))
    theirs = timed(package)
    assert abs(sp.character_alpha(items, annotations) - package()) < 1e-9
    print(f"  α on character labels, {args.subset:,} items ({width:,} characters): {ours:.3f} s here,")
    print(f"  {theirs:.3f} s with the krippendorff package on the raters × characters matrix ({theirs / ours:.1f} x)")


if __name__ == "__main__":
    main()
