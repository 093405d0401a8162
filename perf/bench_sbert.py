"""SBERT through ``scoring`` (each distinct sentence embedded once) against sentence-transformers' documented use
(``encode`` the translations, ``encode`` the references, cosine of the normalised embeddings), in one process, on
the same triplets, alternating, best of ``--repeats``:

    .venv-scoring/bin/python perf/bench_sbert.py --release .gpu/release [--direction en-de --limit 3000 --repeats 2]

A release repeats each gold pair's reference in all of its pseudo translations (and level 0's translation is the
reference), so the two ``encode`` calls embed 2 sentences per triplet and ``scoring`` about 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", required=True)
    ap.add_argument("--direction", default="en-de")
    ap.add_argument("--limit", type=int, default=3000, help="triplets, in release order")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    from scoring.api import Segment, get_metric, open_release

    data = open_release(args.release).load(args.direction)
    segments = [
        Segment(src=s, mt=m, ref=r, target_lang=data.target_lang) for s, m, r in zip(data.src, data.mt, data.ref)
    ][: args.limit]
    scorer = get_metric("SBERT").build(device=args.device, batch_size=args.batch)
    scorer.score(segments[:1])  # model load outside the timings
    kw = dict(batch_size=args.batch, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    times: dict[str, list[float]] = {"two encode calls": [], "scoring": []}
    for _ in range(args.repeats):
        started = time.perf_counter()
        mt, ref = (
            scorer.model.encode([s.mt for s in segments], **kw),
            scorer.model.encode([s.ref for s in segments], **kw),
        )
        baseline = (mt * ref).sum(dim=-1).float().tolist()
        times["two encode calls"].append(time.perf_counter() - started)
        started = time.perf_counter()
        ours = scorer.score(segments).scores
        times["scoring"].append(time.perf_counter() - started)
    distinct = len({t for s in segments for t in (s.mt, s.ref)})
    best = {k: min(v) for k, v in times.items()}
    figures = {
        "triplets": len(segments),
        "distinct_sentences": distinct,
        "seconds": times,
        "speedup": round(best["two encode calls"] / best["scoring"], 2),
        "max_abs_diff": max(abs(a - b) for a, b in zip(baseline, ours)),
    }
    print(
        f"{len(segments)} triplets of {args.direction} ({distinct} distinct sentences; two encode calls embed "
        f"{2 * len(segments)}): two encode calls {best['two encode calls']:.1f} s, scoring {best['scoring']:.1f} s, "
        f"{figures['speedup']}x, max |diff| {figures['max_abs_diff']:.1e}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
