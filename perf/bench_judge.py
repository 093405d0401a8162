"""Throughput of the LLM-judge layer against the judge stub with a fixed latency, and calls per triplet.

With latency L per request and C requests in flight no client does better than C / L requests per second.
Measured here: GEMBA-MQM scoring N distinct triplets through the whole judge path (prompt files, the
shared llm_client, the diskcache store written per answer, GEMBA's parser and span location), as a share
of that bound (target >= 0.95 at C = 32, L = 1 s, N = 800). The stub runs in its own process so its CPU does
not count against the client. Then each judge metric scores the first triplets of a release built from the
shared XQ-MEval data (latency 0): calls per triplet (answers used) and requests sent per triplet (identical
calls, e.g. AskQE's source-side stages, are sent once).

    .venv-scoring/bin/python perf/bench_judge.py [--latency 1] [--concurrency 32] [--requests 800] [--triplets 120]

``--run N``: instead, the whole ``python -m scoring run --metrics cef,askqe,gemba-mqm,dcr`` on the first N en-de
triplets of the shared data against the stub at latency L (a subprocess, timed from its start: imports and
writing the parts count against it): requests sent over the run's wall time, as a share of C / L. The judges
run side by side in one window of C, so one metric's stage boundary is filled by the others' requests.
``--latency 4 --concurrency 32`` (8 requests/s) is the setting docs/judges.md reports against the >= 0.95
target: at 32 requests/s (the default L = 1 s) a loaded 2-core machine's CPU, not the pipeline, sets the
figure. ``--repo`` runs another checkout's scoring (the figure before a change).

The same figure for an injection run: .venv/bin/python perf/bench_injection.py --latency 1 --requests 800 --repeats 1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from scoring.api import Segment, get_metric  # noqa: E402


@contextlib.contextmanager
def stub_process(latency: float):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "scoring.judges.stub", "--port", str(port), "--latency", str(latency)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        proc.stdout.readline()  # "judge stub on ..."
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait()


def segments(n: int) -> list[Segment]:
    src = "Lead researchers say this may bring early detection of cancer, tuberculosis, HIV and malaria."
    mt = "Führende Forscher sagen, dass dies die Früherkennung von Krebs, Tuberkulose, HIV und Malaria bringen könnte"
    return [Segment(src=src, mt=f"{mt} ({i}).", ref=mt, target_lang="de", source_lang="en") for i in range(n)]


def throughput(base_url: str, n: int, concurrency: int, cache_dir: str) -> tuple[float, int, float]:
    scorer = get_metric("gemba-mqm").build(
        judge={
            "model": "stub-judge",
            "base_url": base_url,
            "concurrency": concurrency,
            "cache_dir": cache_dir,
            "timeout": 30,
        }
    )
    cpu0 = time.process_time()
    start = time.perf_counter()
    result = scorer.score(segments(n))
    elapsed = time.perf_counter() - start
    scorer.close()
    return elapsed, sum(1 for s in result.scores if s is not None), (time.process_time() - cpu0) / max(1, n)


def calls_per_triplet(base_url: str, n: int, work: Path) -> dict[str, tuple[float, float]]:
    from scoring.api import ScoreOptions, score_release
    from scoring.tests.releases import SHARED_DATA, write_release_from_shared

    shared = Path(os.environ.get("XQMEVAL_SHARED_DATA", SHARED_DATA))
    release = write_release_from_shared(work / "release", shared, directions=("en-de",))
    out = {}
    for metric in ("gemba-mqm", "askqe", "cef", "dcr"):
        opts = ScoreOptions(
            judge={
                "model": "stub-judge",
                "base_url": base_url,
                "concurrency": 32,
                "cache_dir": str(work / f"cache-{metric}"),
            },
            limit=n,
            extra={"nli_model": "none"} if metric == "askqe" else {},
        )
        [summary] = score_release(release, [metric], out=work / "scores", options=opts)
        judge = summary["judge"]
        out[metric] = (judge["calls"] / summary["n"], judge["sent"] / summary["n"])
    return out


def whole_run(
    base_url: str,
    n: int,
    concurrency: int,
    latency: float,
    work: Path,
    repo: Path = REPO,
    options: tuple[str, ...] = ("--option", "nli_model=none"),
) -> None:
    """``repo``: the checkout whose ``scoring`` runs (an older one gives the figure before a change)."""
    import json

    from scoring.tests.releases import SHARED_DATA, write_release_from_shared

    shared = Path(os.environ.get("XQMEVAL_SHARED_DATA", SHARED_DATA))
    release = write_release_from_shared(work / "release", shared, directions=("en-de",))
    out = work / "scores"
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "scoring",
            "run",
            "--release",
            str(release),
            "--metrics",
            "cef,askqe,gemba-mqm,dcr",
            "--directions",
            "en-de",
            "--limit",
            str(n),
            *options,
            "--judge-url",
            base_url,
            "--judge-model",
            "stub-judge",
            "--concurrency",
            str(concurrency),
            "--out",
            str(out),
            "--quiet",
        ],
        cwd=repo,
        check=True,
    )
    elapsed = time.perf_counter() - start
    summary = json.loads((out / "summary.json").read_text())["metrics"]
    sent = {m: summary[m]["directions"]["en-de"]["judge"]["sent"] for m in summary}
    total = sum(sent.values())
    bound = concurrency / latency
    print(
        f"scoring run, 4 judge metrics, {n} en-de triplets: {total} requests in {elapsed:.1f} s = {total / elapsed:.1f} req/s, "
        f"{total / elapsed / bound:.3f} of the bound C/L = {bound:.1f} (target >= 0.95)"
    )
    print("  requests sent per metric: " + ", ".join(f"{m} {k} ({k / n:.2f} per triplet)" for m, k in sent.items()))
    print(f"  {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (1 min), checkout {repo}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=800)
    parser.add_argument("--triplets", type=int, default=120)
    parser.add_argument(
        "--run", type=int, metavar="N", help="time the whole four-metric scoring run on N triplets instead"
    )
    parser.add_argument(
        "--repo", type=Path, default=REPO, help="with --run: the checkout whose scoring runs (an older one: 'before')"
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-benchmark")
    import logging

    logging.getLogger("httpx2").setLevel(logging.WARNING)
    L, C = args.latency, args.concurrency
    bound = C / L
    if args.run:
        with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp, stub_process(L) as base_url:
            whole_run(base_url, args.run, C, L, Path(tmp), repo=args.repo)
        return
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp, stub_process(L) as base_url:
        throughput(base_url, C, C, f"{tmp}/warm")  # imports, connection pool
        elapsed, ok, cpu = throughput(base_url, args.requests, C, f"{tmp}/cache")
        rate = ok / elapsed
        print(f"latency L = {L * 1000:.0f} ms, concurrency C = {C}, bound C/L = {bound:.1f} req/s")
        print(
            f"gemba-mqm judge path: {ok} triplets in {elapsed:.2f} s = {rate:.1f} req/s, {rate / bound:.3f} of bound (target >= 0.95)"
        )
        print(
            f"client CPU per request (parse, cache write, accounting included): {cpu * 1000:.2f} ms; "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        again, _, _ = throughput(base_url, args.requests, C, f"{tmp}/cache")
        print(f"rerun from the cache: {args.requests} triplets in {again:.2f} s (no request sent)")
    with tempfile.TemporaryDirectory(prefix="bench-judge-") as tmp, stub_process(0.0) as base_url:
        table = calls_per_triplet(base_url, args.triplets, Path(tmp))
        print(f"calls per triplet (first {args.triplets} en-de triplets of the shared data; stub judge):")
        for metric, (calls, sent) in table.items():
            print(f"  {metric:<10} {calls:5.2f} calls used, {sent:5.2f} requests sent")


if __name__ == "__main__":
    main()
