"""The benchmark's pages after review: a project whose candidates are accepted (the pool the merge reads),
at 1,000 candidates and at many more.

What a reviewed FLORES-sized project looks like to these pages: 8 directions, 8 MQM candidates per gold
segment, 16 in 17 accepted (the rest rejected), each with every automatic check's result as an import
records them, one in 7 carrying a check's flag; of the build's records (``CandidatePlacement``), one in 701
placed by transplanting its edit (with its span and drift), one in 997 excluded by the merge. Per
size, median and p95 of: the project page (the pipeline's cards), the benchmark page (counts, releases,
the first rows of the excluded and transplanted candidates), its counts plot, the benchmark API, and the
two lists' CSV downloads; as an admin and as an annotator of one language. Reported with the ratio of each
median to its median at the smallest size, measured in the same run. Each size checks that the page's
totals and the CSVs' rows equal a count of the rows in SQL.

Candidates are topped up with ``INSERT … SELECT generate_series``, then VACUUM (ANALYZE) and a CHECKPOINT
(see ``bench_review_scale.py``). Needs PostgreSQL: creates ``xq_benchmark_pages`` on the server of
``--admin-url`` and drops it at the end (``--keep`` keeps it).

    .venv/bin/python perf/bench_benchmark_pages.py --sizes 1000,1600000 [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_review_scale import (
    django_setup,
    drop_database,
    latency_summary,
    percentile,
    recreate_database,
    top_up_segments,
)

DB_NAME = "xq_benchmark_pages"
DIRECTIONS = ["en-de", "en-ru", "en-zh", "en-ja", "en-cs", "en-fr", "en-hi", "en-uk"]
PER_SEGMENT = 8


def setup_project():
    from django.core.management import call_command

    from core.services import project_directions_add, project_ensure, user_create
    from injection.models import InjectionRun

    call_command("migrate", verbosity=0)
    project, _ = project_ensure(name="pool")
    directions = project_directions_add(project=project, codes=DIRECTIONS)
    run = InjectionRun.objects.create(project=project, name="pool", backend="rule")
    admin = user_create(username="pool_admin", password="pool-pass-123", role="admin")
    annotator = user_create(username="pool_annotator", password="pool-pass-123", languages=["de"])
    return project, directions, run, admin, annotator


def top_up(project, directions, run, candidates: int) -> float:
    """Grow the project to ``candidates`` reviewed candidates (whole segments); seconds taken."""
    # Every candidate carries what an import records, each automatic check's result (the pages decode what
    # they select of it).
    from injection.domain.checks import CHECKS

    routine = {name: {"passed": True, "detail": ""} for name in CHECKS}
    checks = json.dumps(routine)

    def insert_candidates(cur) -> None:
        cur.execute("SELECT COALESCE(MAX(id), 0) FROM injection_candidate")
        (before,) = cur.fetchone()
        cur.execute(
            f"""INSERT INTO injection_candidate (external_id, kind, error_type, position, severity, text, span_start, span_end,
                    edit_text, backend, model, prompt_version, sampling, raw_output, prompt_tokens, completion_tokens, cost_usd,
                    checks, flags, status, status_reason, is_gold, gold_answer, created_at, segment_id, run_id)
                SELECT s.external_id || '-' || k, 'mqm', 'Type' || k, 'head', 'major', 'eins ZWEI drei ' || s.external_id, 1, 2,
                       'ZWEI', 'rule', '', 'v1', '{{}}'::jsonb, '', 0, 0, 0,
                       %s::jsonb,
                       CASE WHEN (s.id * 8 + k) %% 7 = 0 THEN '["length_ratio"]' ELSE '[]' END::jsonb,
                       CASE WHEN (s.id * 8 + k) %% 17 = 0 THEN 'rejected' ELSE 'accepted' END, '',
                       false, '', now(), s.id, %s
                FROM core_goldsegment s CROSS JOIN generate_series(1, {PER_SEGMENT}) AS k
                WHERE s.project_id = %s AND s.id > (SELECT COALESCE(MAX(segment_id), 0) FROM injection_candidate WHERE run_id = %s)""",
            [checks, run.pk, project.pk, run.pk],
        )
        # what a build records of the new candidates: one in 997 excluded, one in 701 transplanted
        cur.execute(
            """INSERT INTO exports_candidateplacement (candidate_id, outcome, reason, drift, span_start, span_end, updated_at)
               SELECT c.id, CASE WHEN c.id %% 997 = 1 THEN 'excluded' ELSE 'transplanted' END,
                      CASE WHEN c.id %% 997 = 1 THEN 'cannot be located' ELSE '' END,
                      CASE WHEN c.id %% 997 = 1 THEN '' ELSE '=drift, quoted' END,
                      CASE WHEN c.id %% 997 = 1 THEN NULL ELSE 1 END, CASE WHEN c.id %% 997 = 1 THEN NULL ELSE 2 END, now()
               FROM injection_candidate c WHERE c.id > %s AND c.run_id = %s AND (c.id %% 997 = 1 OR c.id %% 701 = 0)""",
            [before, run.pk],
        )

    return top_up_segments(project, directions, candidates, PER_SEGMENT, insert_candidates)


def expected(project, language: str | None) -> dict[str, int]:
    """The lists' sizes, counted in SQL (the pages' totals and the CSVs must equal them)."""
    from django.db import connection

    where = "" if language is None else "AND l.code = %(language)s"
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT COUNT(*) FILTER (WHERE p.outcome = 'excluded'), COUNT(*) FILTER (WHERE p.outcome = 'transplanted')
                FROM exports_candidateplacement p JOIN injection_candidate c ON c.id = p.candidate_id
                JOIN core_goldsegment s ON s.id = c.segment_id
                JOIN core_direction d ON d.id = s.direction_id JOIN core_language l ON l.id = d.target_id
                WHERE s.project_id = %(project)s AND c.status = 'accepted' AND c.kind = 'mqm' AND NOT c.is_gold {where}""",
            {"project": project.pk, "language": language},
        )
        excluded, transplanted = cur.fetchone()
    return {"excluded": excluded, "transplanted": transplanted}


def check(client, project, language: str | None) -> None:
    want = expected(project, language)
    html = client.get(f"/benchmarks/{project.name}/").content.decode()
    for table, n in want.items():
        assert re.search(rf"{table.capitalize()} candidates \({n}\)", html), (table, n)
        rows = list(
            csv.reader(io.StringIO(client.get(f"/benchmarks/{project.name}/{table}_candidates.csv").content.decode()))
        )
        assert len(rows) - 1 == n, (table, len(rows) - 1, n)


def measure(project, admin, annotator, calls: int) -> dict[str, list[float]]:
    from django.test import Client

    clients = {}
    for role, user in (("admin", admin), ("annotator", annotator)):
        clients[role] = Client()
        clients[role].force_login(user)
    urls = {
        "project page": f"/projects/{project.name}/",
        "benchmark page": f"/benchmarks/{project.name}/",
        "counts plot": f"/benchmarks/{project.name}/counts.svg",
        "benchmark API": f"/api/benchmarks/{project.name}/",
        "excluded CSV": f"/benchmarks/{project.name}/excluded_candidates.csv",
        "transplanted CSV": f"/benchmarks/{project.name}/transplanted_candidates.csv",
    }
    latency = {}
    for role, client in clients.items():
        for name, url in urls.items():
            assert client.get(url).status_code == 200, (role, url)  # warm: the kept counts, the templates
            times = []
            for _ in range(calls):
                t = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - t)
                assert response.status_code == 200
            latency[f"{name}, {role}"] = times
    check(clients["admin"], project, None)
    check(clients["annotator"], project, "de")
    return latency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes", default="1000,1600000", help="candidate counts, ascending (the first is the baseline)"
    )
    parser.add_argument("--calls", type=int, default=10, help="calls of each page per size and user")
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    db_url = recreate_database(args.admin_url, DB_NAME)
    try:
        django_setup(db_url)
        project, directions, run, admin, annotator = setup_project()
        from injection.models import Candidate

        report = {}
        for size in sizes:
            load_s = top_up(project, directions, run, size)
            n = Candidate.objects.filter(segment__project=project).count()
            latency = measure(project, admin, annotator, args.calls)
            report[size] = {"candidates": n, "load_s": load_s, "latency": latency, "lists": expected(project, None)}
            base = report[sizes[0]]["latency"]
            lists = report[size]["lists"]
            print(
                f"\n== {n:,} candidates ({lists['excluded']:,} excluded, {lists['transplanted']:,} transplanted; loaded in "
                f"{load_s:.1f} s; totals and CSV rows equal the SQL count)",
                flush=True,
            )
            for name, times in latency.items():
                med = statistics.median(times)
                print(
                    f"  {name:<28} median {med * 1000:7.1f} ms  p95 {percentile(times, 95) * 1000:7.1f} ms  "
                    f"x{med / statistics.median(base[name]):.2f} of the first size",
                    flush=True,
                )
        if args.json:
            out = {
                str(k): {
                    "candidates": v["candidates"],
                    "lists": v["lists"],
                    "latency_ms": latency_summary(v["latency"]),
                }
                for k, v in report.items()
            }
            Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(args.admin_url, DB_NAME)


if __name__ == "__main__":
    main()
