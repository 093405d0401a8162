"""Throughput of the OpenAI-compatible backend against the local stub server with a fixed latency.

With latency L per request and C requests in flight, no client can do better than C / L requests per
second. We report the achieved rate as a fraction of that bound (target ≥ 0.9) and the speed-up over one
request at a time (what the published XQ-MEval script does), measured in the same run.

    .venv/bin/python perf/bench_injection.py [--latency 0.2] [--concurrency 32] [--requests 1280] [--end-to-end]

--end-to-end also runs the whole service path (plan, generate, post-process, checks, one transaction per
result) on a temporary SQLite database.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from core.domain.edit_types import edit_type  # noqa: E402
from injection.backends import EditTask, GenerationRequest, Sampling, get_backend  # noqa: E402
from injection.domain.prompts import build_prompt  # noqa: E402

REFERENCE = (
    "Führende Forscher sagen, dass dies die Früherkennung von Krebs, Tuberkulose, HIV und Malaria bringen könnte."
)
SOURCE = "Lead researchers say this may bring early detection of cancer, tuberculosis, HIV and malaria."


def requests(n: int) -> list[GenerationRequest]:
    out = []
    for i in range(n):
        name, position = [
            ("Addition", "head"),
            ("Omission", "end"),
            ("Mistranslation", "head"),
            ("Untranslated", "end"),
        ][i % 4]
        prompt = build_prompt(
            edit_type("mqm", name),
            reference=REFERENCE,
            source=SOURCE,
            language="de",
            position=position,
            structured=True,
        )
        out.append(
            GenerationRequest(
                str(i), prompt.messages, EditTask(REFERENCE, SOURCE, "de", "mqm", name, position), prompt.version
            )
        )
    return out


def measure(base_url: str, n: int, concurrency: int) -> tuple[float, int]:
    backend = get_backend("openai", Sampling(model="gpt-4o"), base_url=base_url, concurrency=concurrency, timeout=30)
    work = requests(n)
    start = time.perf_counter()
    ok = sum(1 for result in backend.generate(work) if result.ok)
    return time.perf_counter() - start, ok


def end_to_end(base_url: str, n_segments: int, concurrency: int) -> tuple[float, int]:
    tmp = tempfile.mkdtemp(prefix="bench-injection-")
    os.environ["DATABASE_URL"] = f"sqlite:///{tmp}/bench.sqlite3"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from core.corpus.domain import CorpusRow
    from core.corpus.services import corpus_rows_import
    from core.services import project_ensure
    from injection import services

    project, _ = project_ensure(name="bench")
    rows = [CorpusRow(str(i), SOURCE, f"{REFERENCE} ({i})", f"row {i}") for i in range(n_segments)]
    corpus_rows_import(project=project, direction_code="en-de", rows=rows, source_name="bench")
    run = services.run_plan(
        spec=services.RunSpec(
            project=project,
            kind="mqm",
            backend="openai",
            directions=["en-de"],
            model="gpt-4o",
            base_url=base_url,
            concurrency=concurrency,
        )
    )
    start = time.perf_counter()
    run = services.run_execute(run_id=run.pk)
    return time.perf_counter() - start, run.done


@contextlib.contextmanager
def stub_process(latency: float):
    """The stub server in its own process, as a real server would be: it does not share our GIL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.stub_openai", "--port", str(port), "--latency", str(latency)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"stub server CPU: {usage.ru_utime + usage.ru_stime:.2f} s in all")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--requests", type=int, default=1280
    )  # 40 rounds of C: start-up (client, TCP connections) amortised
    parser.add_argument("--serial-requests", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--end-to-end", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-local-benchmark")
    import logging

    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one INFO line per request would be measured too
    L, C = args.latency, args.concurrency
    bound = C / L
    with stub_process(L) as base_url:
        server = type("Server", (), {"base_url": base_url})
        measure(server.base_url, C, C)  # warm-up: imports, connection pool
        t1, ok1 = measure(server.base_url, args.serial_requests, 1)
        # Repeated: on a shared machine other processes steal CPU; the best run shows what the client can
        # do, the median what to expect under that load. Both are printed.
        rates, cpu = [], []
        for _ in range(args.repeats):
            cpu0 = time.process_time()
            tc, okc = measure(server.base_url, args.requests, C)
            cpu.append((time.process_time() - cpu0) / max(1, okc))
            rates.append(okc / tc)
        concurrent_rps = max(rates)
        client_cpu = min(cpu)
        serial_rps = ok1 / t1
        median_rps = sorted(rates)[len(rates) // 2]
        print(f"latency L = {L * 1000:.0f} ms, concurrency C = {C}, bound C/L = {bound:.1f} req/s")
        print(
            f"one at a time : {ok1:4d} requests in {t1:6.2f} s = {serial_rps:6.1f} req/s ({serial_rps * L:.3f} of 1/L)"
        )
        print(
            f"C in flight   : {okc:4d} requests x {args.repeats} runs: "
            + ", ".join(f"{r:.1f}" for r in rates)
            + " req/s"
        )
        print(f"fraction of bound: best {concurrent_rps / bound:.3f}, median {median_rps / bound:.3f} (target >= 0.9)")
        print(f"speed-up over one at a time: {concurrent_rps / serial_rps:.1f}x")
        print(
            f"client CPU per request: {client_cpu * 1000:.2f} ms; machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        if args.end_to_end:
            n_segments = max(1, args.requests // 8)
            te, done = end_to_end(server.base_url, n_segments, C)
            rps = done / te
            print(
                f"end to end (service, SQLite, checks): {done} candidates in {te:.2f} s = {rps:.1f} req/s, {rps / bound:.3f} of bound"
            )


if __name__ == "__main__":
    main()
