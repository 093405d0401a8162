"""``python -m scoring``: score a downloaded release without the platform.

    python -m scoring run --release DIR --metrics chrf++,spbleu [--out DIR] [--spm-model FILE]
    python -m scoring list
"""
from __future__ import annotations

import argparse
import json
import sys

from scoring.registry import MetricError, all_metrics, parse_metric_list


def _parse_kv(items: list[str]) -> dict:
    out = {}
    for item in items or []:
        if "=" not in item:
            raise MetricError(f"--option {item!r}: expected KEY=VALUE")
        key, value = item.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scoring", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="score a release directory (or Hub dataset id)")
    run.add_argument("--release", required=True, help="release directory, or a Hub dataset repo id")
    run.add_argument("--metrics", required=True, help="comma-separated metric names (see `list`)")
    run.add_argument("--out", help="output directory (default: RELEASE/scores)")
    run.add_argument("--directions", help="comma-separated directions (default: all in the release)")
    run.add_argument("--model", help="model directory or Hub id overriding the metric's default")
    run.add_argument("--spm-model", help="FLORES-200 SentencePiece file for spBLEU (or $XQMEVAL_SPM_MODEL)")
    run.add_argument("--batch-size", type=int, default=64)
    run.add_argument("--device", help="cpu, cuda, cuda:1 (default: cuda when visible)")
    run.add_argument("--dtype", choices=["float32", "float16", "bfloat16"])
    run.add_argument(
        "--trust-remote-code", action="store_true",
        help="allow a checkpoint's own Python code to run (OmniScore's legacy score_predictor format); off by default: "
        "it executes whatever the checkpoint ships, so only for checkpoints you trust. Recorded in the signature",
    )
    run.add_argument("--chunk-size", type=int, default=4096, help="segments per checkpoint")
    run.add_argument("--option", action="append", metavar="KEY=VALUE", help="metric-specific option, e.g. num_layers=9")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    sub.add_parser("list", help="list the registered metrics")
    args = parser.parse_args(argv)

    try:
        if args.command == "list":
            for spec in all_metrics():
                print(json.dumps(spec.describe(), ensure_ascii=False))
            return 0
        from scoring.runner import ScoreOptions, score_release

        specs = parse_metric_list(args.metrics)
        options = ScoreOptions(
            batch_size=args.batch_size,
            device=args.device,
            model=args.model,
            spm_model=args.spm_model,
            dtype=args.dtype,
            chunk_size=args.chunk_size,
            trust_remote_code=args.trust_remote_code,
            extra=_parse_kv(args.option),
        )
        bars = []

        def progress_factory(metric: str, direction: str, total: int):
            if args.quiet:
                return None
            from tqdm import tqdm

            bar = tqdm(total=total, desc=f"{metric} {direction}", unit="seg", file=sys.stderr)
            bars.append(bar)

            def update(done: int, _total: int) -> None:
                bar.update(done - bar.n)
                if done >= _total:
                    bar.close()

            return update

        results = score_release(
            args.release,
            [s.name for s in specs],
            out=args.out,
            directions=args.directions.split(",") if args.directions else None,
            options=options,
            progress_factory=progress_factory,
        )
    except MetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for r in results:
        flag = " (already done)" if r.get("skipped") else ""
        mean = r["mean"]
        print(f"{r['metric']:>14} {r['direction']:<8} n={r['n']:<6} mean={mean if mean is None else round(mean, 4)}{flag}")
    return 0
