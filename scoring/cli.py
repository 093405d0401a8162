"""``python -m scoring``: score a downloaded release without the platform.

    python -m scoring run --release DIR --metrics chrf++,spbleu [--out DIR] [--spm-model FILE]
    python -m scoring run --release DIR --metrics gemba-mqm,askqe,cef,dcr --directions en-de --limit 40 \
        --judge-url http://HOST:PORT/v1 --judge-model MODEL --out OUT [--dry-run] [--max-usd 5]
    python -m scoring rai --release DIR --direction en-de --judge-url URL --judge-model MODEL --out FILE.parquet
    python -m scoring list

LLM judges read OPENAI_API_KEY from the environment (any value for a local server). Their raw answers are
cached under OUT/.judge-cache (or --judge-cache DIR): a rerun, or a resumed run, sends no request twice.
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
    try:
        return _main(argv)
    finally:
        from scoring.judges.backends import release_engine

        release_engine()  # an in-process vLLM judge: stop its engine core so that the process can exit


def _main(argv: list[str] | None = None) -> int:
    from scoring.judges.engine import BudgetExceeded  # named by the except below, whichever command ran

    args = _parser().parse_args(argv)
    try:
        if args.command == "list":
            for spec in all_metrics():
                print(json.dumps(spec.describe(), ensure_ascii=False))
            return 0
        if args.command == "rai":
            return _rai(args)
        if args.command == "judge-cache":
            from scoring.judges.engine import dump_cache

            for record in dump_cache(args.directory, args.limit):
                print(json.dumps(record, ensure_ascii=False))
            return 0
        results = _run(args)
        if results is None:  # a dry run: the plans are printed
            return 0
    except BudgetExceeded as exc:
        print(f"stopped: {exc}", file=sys.stderr)
        return 3
    except MetricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _print_results(results)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scoring", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _run_arguments(sub.add_parser("run", help="score a release directory (or Hub dataset id)"))
    _rai_arguments(
        sub.add_parser("rai", help="DCR's reason-assisted improver: improved translations from DCE's reasons")
    )
    dump = sub.add_parser("judge-cache", help="print the stored raw judgements of a cache directory as JSON lines")
    dump.add_argument("directory", help="e.g. OUT/.judge-cache")
    dump.add_argument("--limit", type=int)
    sub.add_parser("list", help="list the registered metrics")
    return parser


def _run_arguments(run: argparse.ArgumentParser) -> None:
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
        "--trust-remote-code",
        action="store_true",
        help="allow a checkpoint's own Python code to run (OmniScore's legacy score_predictor format); off by default: "
        "it executes whatever the checkpoint ships, so only for checkpoints you trust. Recorded in the signature",
    )
    run.add_argument("--chunk-size", type=int, default=4096, help="segments per checkpoint")
    run.add_argument(
        "--option",
        action="append",
        metavar="[METRIC:]KEY=VALUE",
        help="a scorer option, e.g. num_layers=9: KEY=VALUE goes to every metric of the run that takes KEY, "
        "METRIC:KEY=VALUE to that metric alone; a KEY no metric of the run takes is an error "
        "(`python -m scoring list` shows what each takes)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument("--limit", type=int, help="first N triplets per direction, in release order")
    _judge_arguments(run)


def _rai_arguments(rai: argparse.ArgumentParser) -> None:
    rai.add_argument("--release", required=True)
    rai.add_argument("--direction", required=True)
    rai.add_argument("--out", required=True, help="output parquet file")
    rai.add_argument("--limit", type=int)
    rai.add_argument("--variant", choices=["mt", "paper"], default="mt")
    rai.add_argument(
        "--rounds", type=int, default=1, help="improve, re-evaluate, improve again (the paper's multi-round RAI)"
    )
    rai.add_argument(
        "--select",
        choices=["amc", "dce"],
        default="amc",
        help="which candidates are rewritten: AMC score below 1 (the paper's Algorithm 1, the authors' example) "
        "or a sentence DCE flags inconsistent",
    )
    _judge_arguments(rai)


def _run(args: argparse.Namespace) -> list[dict] | None:
    """``run``: score the release (its results), or print the plans of a dry run (None)."""
    from scoring.runner import dry_run_release, score_release

    specs = parse_metric_list(args.metrics)
    options = _score_options(args, specs)
    directions = args.directions.split(",") if args.directions else None
    if args.dry_run:
        plans = dry_run_release(
            args.release, [s.name for s in specs], out=args.out, directions=directions, options=options
        )
        _print_plans(plans)
        return None
    return score_release(
        args.release,
        [s.name for s in specs],
        out=args.out,
        directions=directions,
        options=options,
        progress_factory=_progress_factory(quiet=args.quiet),
    )


def _score_options(args: argparse.Namespace, specs: list):
    from scoring.runner import ScoreOptions

    # the flags that are ScoreOptions fields of the same name
    as_given = ("batch_size", "device", "model", "spm_model", "dtype", "chunk_size", "trust_remote_code", "limit")
    options = ScoreOptions(
        **{name: getattr(args, name) for name in as_given}, extra=_parse_kv(args.option), judge=_judge_options(args)
    )
    if args.judges:
        if "cef" not in [s.name for s in specs]:
            raise MetricError("--judges is CEF's judge reliability: add cef to --metrics")
        options.extra["judges"] = args.judges
    return options


def _progress_factory(*, quiet: bool):
    """A progress bar per (metric, direction) on stderr, or none when ``quiet``."""
    bars = []

    def progress_factory(metric: str, direction_code: str, total: int):
        if quiet:
            return None
        from tqdm import tqdm

        # a line each: judge metrics run side by side (scoring.runner.score_release)
        bar = tqdm(total=total, desc=f"{metric} {direction_code}", unit="seg", file=sys.stderr, position=len(bars))
        bars.append(bar)

        def update(done: int, _total: int) -> None:
            bar.update(done - bar.n)
            if done >= _total:
                bar.close()

        return update

    return progress_factory


def _print_results(results: list[dict]) -> None:
    for r in results:
        flag = " (already done)" if r.get("skipped") else ""
        mean = r["mean"]
        judge = r.get("judge")
        cost = (
            f" calls={judge['calls']} sent={judge['sent']} cached={judge['cached']} tokens={judge['prompt_tokens']}+{judge['completion_tokens']} ${judge['cost_usd']:.4f}"
            if judge
            else ""
        )
        failed = f" failed={r['n_retry']} (rerun to retry)" if r.get("n_retry") else ""
        print(
            f"{r['metric']:>14} {r['direction']:<8} n={r['n']:<6} mean={mean if mean is None else round(mean, 4)}{flag}{cost}{failed}"
        )


def _judge_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("LLM judges (gemba-mqm, askqe, cef, dcr)")
    g.add_argument(
        "--judge-url", default="", help="OpenAI-compatible base URL (e.g. http://host:8000/v1); default: api.openai.com"
    )
    g.add_argument("--judge-model", default="", help="the judge model name the endpoint serves")
    g.add_argument(
        "--judge-backend",
        default="openai",
        choices=["openai", "vllm"],
        help="openai: any OpenAI-compatible endpoint; vllm: in-process engine",
    )
    g.add_argument(
        "--judges", help="CEF reliability: comma-separated judge models; ADR/ADS per judge beside the scores"
    )
    g.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    g.add_argument("--rpm", type=float, help="requests per minute at most")
    g.add_argument("--judge-timeout", type=float, default=120.0)
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument(
        "--max-tokens", type=int, help="default: the metric's own (GEMBA-MQM starts at 500 as its authors do)"
    )
    g.add_argument("--seed", type=int)
    g.add_argument(
        "--structured", action="store_true", help="ask for JSON-schema output where the metric offers a schema"
    )
    g.add_argument("--judge-cache", help="cache directory of raw judgements (default OUT/.judge-cache)")
    g.add_argument(
        "--max-usd", type=float, help="stop the run once the estimated cost reaches this (prices: LLM_PRICES)"
    )
    g.add_argument(
        "--dry-run", action="store_true", help="print calls, tokens and the cost bound; send and write nothing"
    )
    g.add_argument(
        "--prompt-file",
        action="append",
        metavar="NAME=PATH",
        help="replace a packaged prompt (its hash enters the signature)",
    )
    g.add_argument(
        "--engine-option", action="append", metavar="KEY=VALUE", help="vllm.LLM argument for --judge-backend vllm"
    )


def _judge_options(args) -> dict:
    judge = {
        "model": args.judge_model,
        "base_url": args.judge_url,
        "backend": args.judge_backend,
        "concurrency": args.concurrency,
        "rpm": args.rpm,
        "timeout": args.judge_timeout,
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "seed": args.seed,
        "structured": args.structured,
        "cache_dir": args.judge_cache,
        "max_usd": args.max_usd,
        "dry_run": getattr(args, "dry_run", False),
        "engine_options": _parse_kv(args.engine_option),
    }
    if args.prompt_file:
        judge["prompt_files"] = args.prompt_file
    return judge


def _print_plans(plans: list[dict]) -> None:
    print("dry run: nothing sent, nothing written")
    for p in plans:
        d = p.get("dry_run", {})
        print(
            f"{p['metric']:>10} {p['direction']:<8} triplets={p['triplets']:<5} calls={p['calls']:<6} cached={p['cached']:<6} "
            f"to send={d.get('calls', 0):<6} ~prompt tokens={d.get('prompt_tokens', 0):<8} ~completion tokens={d.get('completion_tokens', 0)} "
            f"(at most {d.get('completion_tokens_max', 0)}) ~cost=${d.get('cost_usd', 0):.4f} cost at most=${d.get('cost_usd_max', 0):.4f}"
        )
    total = sum(p.get("dry_run", {}).get("cost_usd_max", 0) for p in plans)
    print(
        f"total: {sum(p.get('dry_run', {}).get('calls', 0) for p in plans)} calls to send, cost at most ${total:.4f} "
        "(0 for models without a price: set LLM_PRICES='{\"model\": [in, out]}' USD per million tokens)"
    )


def _rai(args) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scoring.metrics.dcr import RAI
    from scoring.registry import Segment
    from scoring.release import open_release

    release = open_release(args.release)
    data = release.load(args.direction)
    if args.limit is not None:
        data = data.head(args.limit)
    judge = _judge_options(args)
    if not judge.get("cache_dir"):
        from pathlib import Path

        judge["cache_dir"] = str(Path(args.out).resolve().parent / ".judge-cache")
    tool = RAI(judge=judge, variant=args.variant, rai_select=args.select)
    segments = [
        Segment(
            src=data.src[i], mt=data.mt[i], ref=data.ref[i], target_lang=data.target_lang, source_lang=data.source_lang
        )
        for i in range(len(data))
    ]
    before = tool.score(segments).scores
    current = segments
    improved: list = [s.mt for s in segments]
    for _ in range(max(1, args.rounds)):
        texts, _, _ = tool.improve(current)
        improved = [t if t is not None else s.mt for t, s in zip(texts, current)]
        current = [
            Segment(src=s.src, mt=t, ref=s.ref, target_lang=s.target_lang, source_lang=s.source_lang)
            for s, t in zip(current, improved)
        ]
    after = tool.score(current).scores
    table = pa.table(
        {
            "triplet_id": data.triplet_ids,
            "mt": data.mt,
            "improved": improved,
            "score_before": before,
            "score_after": after,
        }
    )
    pq.write_table(table, args.out)
    stats = tool.stats()
    tool.close()
    print(
        f"rai {args.direction}: {len(data)} triplets -> {args.out}; calls={stats['calls']} sent={stats['sent']} cached={stats['cached']} ${stats['cost_usd']:.4f}"
    )
    return 0
