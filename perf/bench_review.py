"""Review assignment under load: PostgreSQL + gunicorn on loopback, 32 concurrent simulated annotators.

Each annotator logs in, then repeats get-next (POST /api/review/projects/<p>/next/) and submit
(POST /api/review/decisions/) until its queue is empty. Reported: p50/p95 latency of both calls,
decisions per second, and, as the baseline measured in the same run under the same concurrency, the
latency of /healthz (one ``SELECT 1`` through the same stack), so the figures read as ratios that carry
over between machines. Afterwards the database is checked: no candidate has more than N decisions,
every candidate has exactly N, and every decision the server confirmed (201) is stored exactly once.

    .venv/bin/python perf/bench_review.py --candidates 400 --annotators 32 --workers 4

Needs PostgreSQL (``--admin-url``, default postgres://postgres@127.0.0.1:5432/postgres); it creates and
drops its own database ``xqmeval_bench_review``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
DB_NAME = "xqmeval_bench_review"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recreate_database(admin_url: str) -> str:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    return admin_url.rsplit("/", 1)[0] + "/" + DB_NAME


def django_setup(db_url: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def seed(candidates: int, annotators: int, reviewers: int) -> None:
    from django.core.management import call_command

    from core.models import GoldSegment
    from core.services import project_directions_add, project_ensure, user_create
    from injection.models import Candidate, InjectionRun

    call_command("migrate", verbosity=0)
    project, _ = project_ensure(name="bench", reviewers_per_candidate=reviewers)
    (direction,) = project_directions_add(project=project, codes=["en-de"])
    run = InjectionRun.objects.create(project=project, name="bench", backend="import")
    segments = GoldSegment.objects.bulk_create(
        GoldSegment(
            project=project,
            direction=direction,
            external_id=str(i),
            source=f"source {i}",
            reference=f"eins zwei drei vier {i}",
        )
        for i in range(candidates)
    )
    Candidate.objects.bulk_create(
        Candidate(
            run=run,
            segment=s,
            error_type="Mistranslation",
            position="head",
            text=f"eins ZWEI drei vier {s.external_id}",
            span_start=1,
            span_end=2,
            edit_text="ZWEI",
        )
        for s in segments
    )
    for i in range(annotators):
        user_create(username=f"bench{i}", password="bench-pass", languages=["de"])
    # Planner statistics as autovacuum would have them a minute after an import; without them PostgreSQL
    # plans the queue query for empty tables (nested loops over correlated subqueries: seconds, not ms).
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def start_gunicorn(db_url: str, port: int, workers: int) -> subprocess.Popen:
    env = os.environ | {
        "DATABASE_URL": db_url,
        "DEBUG": "0",
        "SECRET_KEY": "bench-only-" + uuid.uuid4().hex,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DB_CONN_MAX_AGE": "600",
        "LOG_LEVEL": "WARNING",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "xqmeval.wsgi",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("gunicorn did not come up")


async def login(client: httpx.AsyncClient, username: str) -> str:
    await client.get("/accounts/login/")
    token = client.cookies["csrftoken"]
    r = await client.post(
        "/accounts/login/",
        data={"username": username, "password": "bench-pass", "csrfmiddlewaretoken": token},
        headers={"Referer": str(client.base_url) + "/accounts/login/"},
    )
    if r.status_code != 302:
        raise SystemExit(f"login of {username} failed: {r.status_code}")
    return client.cookies["csrftoken"]


async def annotator(base: str, username: str, stats: dict, start: asyncio.Event, think_ms: float = 0.0) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        token = await login(client, username)
        headers = {"X-CSRFToken": token, "Referer": base + "/review/"}
        stats["ready"] += 1
        if stats["ready"] == stats["annotators"]:  # the clock starts once everyone is logged in
            stats["t0"] = time.perf_counter()
            start.set()
        await start.wait()
        while True:
            t0 = time.perf_counter()
            r = await client.post("/api/review/projects/bench/next/", headers=headers)
            stats["next"].append(time.perf_counter() - t0)
            r.raise_for_status()
            got = r.json()
            if got["candidate"] is None:
                return
            if think_ms:  # the annotator reads the item; jittered so 32 people do not click in lockstep
                await asyncio.sleep(random.uniform(0.5, 1.5) * think_ms / 1000)
            body = {
                "candidate": got["candidate"]["id"],
                "round": got["round"],
                "decision": "accept",
                "idempotency_key": uuid.uuid4().hex,
                "time_spent_ms": 1000,
            }
            t0 = time.perf_counter()
            r = await client.post("/api/review/decisions/", json=body, headers=headers)
            stats["submit"].append(time.perf_counter() - t0)
            if r.status_code == 201:
                stats["confirmed"].append(r.json()["id"])
            else:
                stats["refused"].append((r.status_code, r.text[:200]))


async def baseline(base: str, clients: int, requests_each: int) -> list[float]:
    lat: list[float] = []

    async def one():
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            for _ in range(requests_each):
                t0 = time.perf_counter()
                (await client.get("/healthz")).raise_for_status()
                lat.append(time.perf_counter() - t0)

    await asyncio.gather(*(one() for _ in range(clients)))
    return lat


async def load(base: str, annotators: int, think_ms: float = 0.0) -> tuple[dict, float]:
    stats = {"next": [], "submit": [], "confirmed": [], "refused": [], "ready": 0, "annotators": annotators}
    start = asyncio.Event()
    await asyncio.gather(*(annotator(base, f"bench{i}", stats, start, think_ms) for i in range(annotators)))
    return stats, time.perf_counter() - stats["t0"]


def verify(stats: dict, reviewers: int, candidates: int) -> list[str]:
    from annotation.models import ReviewDecision
    from injection.models import Candidate

    problems = []
    per = Counter(ReviewDecision.objects.values_list("candidate_id", flat=True))
    over = [c for c, n in per.items() if n > reviewers]
    if over:
        problems.append(f"{len(over)} candidates have more than {reviewers} decisions")
    short = candidates - sum(1 for n in per.values() if n == reviewers)
    if short:
        problems.append(f"{short} candidates have fewer than {reviewers} decisions")
    stored = set(ReviewDecision.objects.values_list("id", flat=True))
    confirmed = stats["confirmed"]
    if len(confirmed) != len(set(confirmed)):
        problems.append("a decision id was confirmed twice")
    lost = set(confirmed) - stored
    if lost:
        problems.append(f"{len(lost)} confirmed decisions are missing from the database")
    if len(stored) != len(confirmed):
        problems.append(f"{len(stored)} decisions stored but {len(confirmed)} confirmed")
    if Candidate.objects.exclude(status="accepted").exists():
        problems.append("some candidates did not get their status")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=400)
    parser.add_argument("--annotators", type=int, default=32)
    parser.add_argument("--reviewers", type=int, default=2, help="N reviewers per candidate")
    parser.add_argument("--workers", type=int, default=max(2, (os.cpu_count() or 2) * 2), help="gunicorn sync workers")
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="mean time an annotator spends on an item between get-next and submit (0: back to back, "
        "the saturation test; people take seconds per item)",
    )
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    args = parser.parse_args()

    db_url = recreate_database(args.admin_url)
    django_setup(db_url)
    seed(args.candidates, args.annotators, args.reviewers)
    port = free_port()
    server = start_gunicorn(db_url, port, args.workers)
    base = f"http://127.0.0.1:{port}"
    try:
        base_lat = asyncio.run(baseline(base, args.annotators, 20))
        stats, elapsed = asyncio.run(load(base, args.annotators, args.think_ms))
    finally:
        server.terminate()
        server.wait(timeout=30)
    problems = verify(stats, args.reviewers, args.candidates)
    decisions = len(stats["confirmed"])
    ms = lambda xs, q: 1000 * percentile(xs, q)  # noqa: E731
    pace = f", {args.think_ms:.0f} ms mean think time per item" if args.think_ms else ", back to back (no think time)"
    print(
        f"machine: {os.cpu_count()} CPUs; gunicorn {args.workers} sync workers; PostgreSQL; {args.annotators} concurrent annotators{pace}"
    )
    print(
        f"candidates {args.candidates} x N={args.reviewers}: {decisions} decisions in {elapsed:.1f} s = {decisions / elapsed:.1f} decisions/s"
    )
    print(f"{'call':<22}{'n':>7}{'p50 ms':>10}{'p95 ms':>10}{'p95 / baseline p95':>22}")
    b95 = ms(base_lat, 95)
    for name, xs in (
        ("baseline GET /healthz", base_lat),
        ("get-next", stats["next"]),
        ("submit", stats["submit"]),
        ("get-next + submit", [a + b for a, b in zip(stats["next"], stats["submit"])]),
    ):
        print(f"{name:<22}{len(xs):>7}{ms(xs, 50):>10.1f}{ms(xs, 95):>10.1f}{ms(xs, 95) / b95:>22.2f}")
    print(f"refused submissions: {len(stats['refused'])} {Counter(s for s, _ in stats['refused'])}")
    print(
        "integrity: "
        + (
            "OK — no candidate over N, every candidate has N, no confirmed decision lost or duplicated"
            if not problems
            else "; ".join(problems)
        )
    )
    target = ms(stats["next"] + stats["submit"], 95)
    print(f"p95 over both calls: {target:.1f} ms (target <= 50 ms: {'met' if target <= 50 else 'NOT met'})")
    print(
        f"statistics.mean get-next {1000 * statistics.mean(stats['next']):.1f} ms, submit {1000 * statistics.mean(stats['submit']):.1f} ms"
    )
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
