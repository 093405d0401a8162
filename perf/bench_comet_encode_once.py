"""COMET-22 through ``python -m scoring run``: ``predict`` (the default) against ``--option encode_once=true``
(each distinct sentence of a chunk embedded once), on the same release triplets, dtype, batch size and device.

COMET-22's encoder reads source, translation and reference separately, and a release repeats each gold pair's
source and reference in all of its pseudo translations, so the encoder work falls from 3 sentences per triplet to
about 1. This measures what that is worth end to end (interpreter start, model load, reading, writing) and how
far the scores move (padding only).

    .venv-scoring/bin/python perf/bench_gpu.py prepare .gpu/tok          # tokenizers, once
    .venv-scoring/bin/python perf/bench_comet_encode_once.py --tokenizers .gpu/tok --release .gpu/release \\
        [--device cpu --layers 2 --limit 204 --batch 32 --dtype float32 --repeats 2]

The model is COMET-22's architecture (XLM-R large widths, wmt22-comet-da's head) with random weights and
``--layers`` encoder layers (24 is the published model; fewer keep a CPU run to minutes: the ratio is a ratio
of encoder work, which every layer shares). ``--limit`` is the triplets per direction, in release order (whole
gold pairs: a release keeps each gold pair's triplets together). Each side runs ``--repeats`` times, alternating;
the best wall time of each counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "perf"))
sys.path.insert(0, str(REPO))

from bench_gpu import SHAPES, XLMR_LARGE, _comet_checkpoint, read_scores, scoring_cmd, subset_release, timed_process  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizers", required=True, help="perf/bench_gpu.py prepare's output (its xlmr/ tokenizer)")
    ap.add_argument("--release", required=True)
    ap.add_argument("--work", default="/tmp/bench-comet-encode-once")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--layers", type=int, default=XLMR_LARGE["num_hidden_layers"])
    ap.add_argument("--limit", type=int, default=0, help="triplets per direction (0: all)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if args.device == "cpu":
        os.environ["XQMEVAL_ALLOW_GPU_METRICS_ON_CPU"] = "1"
    import pyarrow.parquet as pq
    import torch

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    model = work / "COMET-22"
    torch.manual_seed(0)
    with torch.device(args.device):
        _comet_checkpoint(
            model, SHAPES["COMET-22"], {**XLMR_LARGE, "num_hidden_layers": args.layers}, Path(args.tokenizers) / "xlmr"
        )
    release, ids, _ = subset_release(Path(args.release), args.limit, work / "release")
    sentences = (
        0  # what encode_once embeds: the distinct sentences of each direction (its chunks hold whole gold pairs)
    )
    for p in sorted(release.glob("*/test.parquet")):
        t = pq.read_table(p, columns=["src", "mt", "ref"]).to_pydict()
        sentences += len({s for k in ("src", "mt", "ref") for s in t[k]})
    spec = {"batch": args.batch}
    sides = {"predict": (), "encode_once": ("encode_once=true",)}
    walls: dict[str, list[float]] = {side: [] for side in sides}
    scores: dict[str, dict[str, float]] = {}
    for repeat in range(args.repeats):
        for side, options in sides.items():
            out = work / f"scores-{side}"
            cmd = scoring_cmd(release, "COMET-22", model, out, spec, args.dtype, args.device, options)
            wall, _, rc = timed_process(cmd, work / f"{side}-{repeat}.log", time.monotonic() + 7200)
            if rc:
                sys.exit((work / f"{side}-{repeat}.log").read_text()[-3000:])
            walls[side].append(wall)
            scores[side] = read_scores(out, "COMET-22")
            print(f"{side:<12} run {repeat + 1}: {wall:7.1f} s, {len(ids) / wall:8.1f} triplets/s", flush=True)
    best = {side: min(w) for side, w in walls.items()}
    figures = {
        "device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"CPU ({os.cpu_count()} cores)",
        "torch": torch.__version__,
        "dtype": args.dtype,
        "layers": args.layers,
        "batch_size": args.batch,
        "triplets": len(ids),
        "distinct_sentences": sentences,
        "sentences_per_triplet": round(sentences / len(ids), 3),
        "predict_s": round(best["predict"], 2),
        "encode_once_s": round(best["encode_once"], 2),
        "predict_triplets_per_s": round(len(ids) / best["predict"], 1),
        "encode_once_triplets_per_s": round(len(ids) / best["encode_once"], 1),
        "speedup": round(best["predict"] / best["encode_once"], 2),
        "max_abs_diff": max(abs(scores["predict"][i] - scores["encode_once"][i]) for i in ids),
        "walls": walls,
    }
    print(
        f"{len(ids)} triplets ({sentences} distinct sentences, {figures['sentences_per_triplet']} per triplet; predict "
        f"encodes 3), {args.dtype}, {args.layers} layers, batch {args.batch}, {figures['device']}: predict "
        f"{figures['predict_triplets_per_s']} triplets/s, encode_once {figures['encode_once_triplets_per_s']} triplets/s, "
        f"speedup {figures['speedup']}x, max |diff| {figures['max_abs_diff']:.2e}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
