"""Review at scale: get-next, submit and the progress pages with 1,000 candidates in the queues and with many more.

One annotator who works on every direction of one project (so every candidate is in their queue) calls,
in this process through Django's test client (the whole stack but the network: middleware, session,
permissions, the API), get-next (POST /api/review/projects/<p>/next/) then submit (POST
/api/review/decisions/) a few hundred times; then the pages that show review progress: the progress API,
the review screen (its header counts what is left), the annotator's start page, the admin's review page
(per-language progress, annotator statistics, rounds), the project page (the pipeline's stages: counts,
review progress, the adjudication queue, the agreement headline) as the admin and as the annotator see it,
and the projects list. Reported per queue size: median and p95 of
each, and the ratio of each median to its median at the smallest size, measured in the same run.

The queue grows between steps: the candidates are topped up with ``INSERT … SELECT generate_series``
(gold segments over 8 directions, 8 candidates per segment: 4 error types × 2 positions, as the rule
injector makes them), then VACUUM (ANALYZE) and a CHECKPOINT (what autovacuum and the checkpointer do in the
minutes after an import; left to them, they run during the timings).
The review progress counters follow the inserts through their triggers, as for any writer (no recount);
at each size, after the timings, the figures the pages read from them are checked against the exact count
of the rows (the old queries).
The decisions of the earlier steps stay, so a larger step also has more decisions, locks and audit rows.

Needs PostgreSQL: creates ``xq_review_scale`` on the server of ``--admin-url``, migrates it, drops it at
the end (``--keep`` keeps it for EXPLAIN ANALYZE by hand).

    .venv/bin/python perf/bench_review_scale.py --sizes 1000,100000,1600000 --calls 200 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DB_NAME = "xq_review_scale"
DIRECTIONS = ["en-de", "en-ru", "en-zh", "en-ja", "en-cs", "en-fr", "en-hi", "en-uk"]
ERROR_TYPES = ["Mistranslation", "Omission", "Addition", "Untranslated"]
POSITIONS = ["head", "tail"]
PER_SEGMENT = len(ERROR_TYPES) * len(POSITIONS)
ADMIN_LISTS = [
    ("candidates", "/admin/injection/candidate/"),
    ("review decisions", "/admin/annotation/reviewdecision/"),
    ("gold segments", "/admin/core/goldsegment/"),
    ("audit events", "/admin/annotation/auditevent/"),
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def recreate_database(admin_url: str, name: str = DB_NAME) -> str:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin_url.rsplit("/", 1)[0] + "/" + name


def drop_database(admin_url: str, name: str = DB_NAME) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def django_setup(db_url: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("SECRET_KEY", "bench-only-" + uuid.uuid4().hex)
    os.environ["DEBUG"] = "0"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("XQMEVAL_DATA_DIR", tempfile.mkdtemp(prefix="xq_review_scale_"))
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ["DJANGO_SETTINGS_MODULE"] = "xqmeval.settings"
    import django

    django.setup()


def setup_project():
    from django.core.management import call_command

    from core.services import project_directions_add, project_ensure, user_create
    from injection.models import InjectionRun

    call_command("migrate", verbosity=0)
    project, _ = project_ensure(name="scale", reviewers_per_candidate=2)
    directions = project_directions_add(project=project, codes=DIRECTIONS)
    run = InjectionRun.objects.create(project=project, name="scale", backend="rule")
    langs = [d.target.code for d in directions]
    annotator = user_create(username="scale_annotator", password="scale-pass-123", languages=langs)
    admin = user_create(username="scale_admin", password="scale-pass-123", role="admin")
    return project, directions, run, annotator, admin


def top_up(project, directions, run, candidates: int) -> float:
    """Grow the project to ``candidates`` candidates (rounded up to whole segments); seconds taken."""
    from injection.models import Candidate

    def insert_candidates(cur) -> None:
        types = "ARRAY[" + ",".join(f"'{t}'" for t in ERROR_TYPES) + "]"
        positions = "ARRAY[" + ",".join(f"'{p}'" for p in POSITIONS) + "]"
        cur.execute(
            f"""INSERT INTO injection_candidate (external_id, kind, error_type, position, severity, text, span_start, span_end,
                    edit_text, backend, model, prompt_version, sampling, raw_output, prompt_tokens, completion_tokens, cost_usd,
                    checks, flags, status, status_reason, is_gold, gold_answer, created_at, segment_id, run_id)
                SELECT s.external_id || '-' || t || '-' || p, 'error', t, p, 'major',
                       'eins ZWEI drei vier fuenf ' || s.external_id, 1, 2, 'ZWEI', 'rule', '', 'v1', '{{}}'::jsonb, '', 0, 0, 0,
                       '{{}}'::jsonb, CASE WHEN s.id %% 7 = 0 THEN '["length_ratio"]' ELSE '[]' END::jsonb, %s, '', false, '',
                       now(), s.id, %s
                FROM core_goldsegment s, unnest({types}) AS t, unnest({positions}) AS p
                WHERE s.project_id = %s AND s.id > (SELECT COALESCE(MAX(segment_id), 0) FROM injection_candidate WHERE run_id = %s)
                ORDER BY s.id, t, p""",
            [Candidate.Status.PENDING, run.pk, project.pk, run.pk],
        )

    return top_up_segments(project, directions, candidates, PER_SEGMENT, insert_candidates)


def top_up_segments(project, directions, candidates: int, per_segment: int, insert_candidates) -> float:
    """Grow the project to enough gold segments for ``candidates`` candidates at ``per_segment`` each (over
    ``directions`` in turn), give the new segments their candidates (``insert_candidates(cursor)``, in the
    same transaction), then settle the database; seconds taken (0 when it is that large already)."""
    from django.db import connection, transaction

    from core.models import GoldSegment

    have = GoldSegment.objects.filter(project=project).count()
    want = -(-candidates // per_segment)
    if want <= have:
        return 0.0
    t0 = time.perf_counter()
    dir_ids = "ARRAY[" + ",".join(str(d.pk) for d in directions) + "]::bigint[]"
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            f"""INSERT INTO core_goldsegment (external_id, source, reference, metadata, created_at, direction_id, project_id)
                SELECT 's' || i, 'source sentence number ' || i, 'eins zwei drei vier fuenf ' || i, '{{}}'::jsonb, now(),
                       ({dir_ids})[1 + i %% {len(directions)}], %s
                FROM generate_series(%s, %s) AS i""",
            [project.pk, have, want - 1],
        )
        insert_candidates(cur)
    # What autovacuum and the checkpointer do in the minutes after an import, done before the timings:
    # otherwise the vacuum of the new rows and the flush of their WAL run during them, on the same 2 cores.
    with connection.cursor() as cur:
        cur.execute("VACUUM (ANALYZE)")
        cur.execute("CHECKPOINT")
    return time.perf_counter() - t0


def add_reviews(project, decisions: int, reviewers: int = 8) -> float:
    """Give ``decisions`` candidates one round-1 decision each from ``reviewers`` other annotators (one
    ``INSERT … SELECT``: the decision triggers keep the counters, as for any writer); seconds taken. Statuses
    are left as they were (no service re-derives them here): what grows is the decision table, which the
    admin page's per-annotator statistics read. They were made over the past 60 days (none in the last
    hour: the annotator's timed submits are the recent ones)."""
    from django.db import connection, transaction

    from annotation.review import selectors
    from core.services import user_create

    langs = [code.split("-")[1] for code in DIRECTIONS]
    ids = [
        user_create(username=f"scale_reviewer_{i}", password="scale-pass-123", languages=langs).pk
        for i in range(reviewers)
    ]
    rnd = selectors.first_round(project)
    # A fresh session: in the session that ran the timed submits, this one INSERT of 1.6 M annotator
    # decisions ran for over 8 minutes (once; a fresh session: linear, ~30 µs a row), most likely a plan of
    # the decision trigger's statement that PL/pgSQL cached while the table was small. Not investigated
    # further; the product inserts annotator decisions one at a time (imported ones skip that statement).
    connection.close()
    t0 = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            f"""INSERT INTO annotation_reviewdecision (candidate_id, reviewer_id, round_id, decision, source, is_final, reason,
                    comment, time_spent_ms, idempotency_key, created_at, updated_at)
                SELECT c.id, (ARRAY[{",".join(map(str, ids))}]::bigint[])[1 + (c.n %% {reviewers})], %s,
                       CASE WHEN c.n %% 5 = 0 THEN 'reject' ELSE 'accept' END, 'annotator', false, '', '',
                       NULLIF(500 + (c.n * 7919) %% 20000, 500), NULL,
                       now() - make_interval(secs => 3600 + (c.n * 7919) %% (60 * 86400)), now()
                FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM injection_candidate c
                       WHERE c.segment_id IN (SELECT id FROM core_goldsegment WHERE project_id = %s)
                       ORDER BY id LIMIT %s) c""",
            [rnd.pk, project.pk, decisions],
        )
    with connection.cursor() as cur:
        cur.execute("VACUUM (ANALYZE)")
        cur.execute("CHECKPOINT")
    return time.perf_counter() - t0


def time_annotator_stats(project, runs: int = 3) -> dict:
    """The grouped query against the Python computation over every decision (the old code), same answer."""
    from django.utils import timezone

    from annotation.review import selectors

    now = timezone.now()
    fast = timed(lambda: selectors.annotator_stats(project, now=now), runs, 60)
    exact = timed(lambda: selectors.exact_annotator_stats(project, now=now), runs, 60)
    assert selectors.annotator_stats(project, now=now) == selectors.exact_annotator_stats(project, now=now)
    return {"grouped query": fast, "Python over every decision": exact}


def time_figures_refresh(project) -> dict:
    """The admin page's decision figures computed as the agreement refresh computes them on a worker (a
    pass over every decision)."""
    from annotation.review import selectors

    return {"figures refresh (worker)": timed(lambda: selectors.compute_decision_figures(project), 1, 60)}


def time_page_with_workers(project, admin, calls: int = 10) -> dict:
    """The admin page as it runs when workers refresh its figures: on the kept figures plus the live last
    hour (the same work whether a write made them stale or not). Only the page's view of the setting
    changes (a GET queues nothing)."""
    from django.test import Client, override_settings
    from django.urls import reverse

    boss = Client()
    boss.force_login(admin)
    url = reverse("review:manage", args=[project.name])
    with override_settings(CELERY_TASK_ALWAYS_EAGER=False):
        boss.get(url)
        return {"admin page, with workers": timed(lambda: boss.get(url), calls, 60)}


def time_agreement(project, admin, calls: int = 10) -> dict:
    """The agreement dashboard as it runs with workers. The refresh computes every scope's report once (on
    a worker; here in this process, with 20 bootstrap resamples: the page's cost does not depend on them);
    then the page decides from the review change log whether what the cache holds is current. "rows
    digest" is what every view did before the change log: read every decision and rating of the scope
    and hash them (it still does for a project under ``REVIEW_FIGURES_LIVE_LIMIT`` rows whose log moved)."""
    from django.test import Client, override_settings
    from django.urls import reverse

    from annotation.agreement import refresh
    from annotation.agreement import selectors as sel

    boss = Client()
    boss.force_login(admin)
    url = reverse("agreement:dashboard", kwargs={"project": project.name})

    def page():
        r = boss.get(url)
        assert r.status_code == 200 and 'data-state="fresh"' in r.content.decode(), r.status_code

    with override_settings(CELERY_TASK_ALWAYS_EAGER=False, AGREEMENT_BOOTSTRAP_RESAMPLES=20):
        out = {"agreement refresh (worker)": timed(lambda: refresh.refresh_project(project.pk), 1, 900)}
        page()
        out["agreement page, with workers"] = timed(page, calls, 60)
        out["rows digest (page before)"] = timed(lambda: sel.report_cache_key(project), 3, 120)
    return out


def latency_summary(latency: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Each endpoint's median and p95 in milliseconds, and the number of requests timed (the JSON reports)."""
    return {
        name: {"median": statistics.median(t) * 1000, "p95": percentile(t, 95) * 1000, "n": len(t)}
        for name, t in latency.items()
    }


def print_latencies(latency: dict, baseline: dict, width: int = 20) -> None:
    """A line per call: median, p95 and the ratio of the median to the first size's (when it was measured there)."""
    for name, lat in latency.items():
        med = statistics.median(lat)
        base = baseline["latency"].get(name)
        ratio = f"  ratio to {baseline['candidates']:,}: {med / statistics.median(base):5.2f}" if base else ""
        print(
            f"  {name:{width}s} n={len(lat):4d}  median {med * 1000:8.1f} ms  p95 {percentile(lat, 95) * 1000:8.1f} ms{ratio}",
            flush=True,
        )


def timed(fn, n: int, budget_s: float) -> list[float]:
    """Up to ``n`` calls, stopping early (after at least 3) once ``budget_s`` is spent: a page that takes
    seconds at 1.6 M candidates is measured a few times, not twenty."""
    out = []
    start = time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
        if len(out) >= 3 and time.perf_counter() - start > budget_s:
            break
    return out


def slowest_query(fn) -> tuple[float, str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        fn()
    worst = max(ctx.captured_queries, key=lambda q: float(q["time"]))
    return float(worst["time"]), worst["sql"]


def measure(project, annotator, admin, calls: int, page_calls: int, admin_calls: int, budget_s: float) -> dict:
    from django.test import Client
    from django.urls import reverse

    me, boss = Client(), Client()
    me.force_login(annotator)
    boss.force_login(admin)
    next_url = reverse("review_api:next", args=[project.name])
    decisions_url = reverse("review_api:decisions")
    state = {}

    def get_next():
        r = me.post(next_url)
        assert r.status_code == 200, r.content[:300]
        got = r.json()
        assert got["candidate"] is not None, "queue ran dry"
        state["got"] = got

    def submit():
        got = state["got"]
        body = {
            "candidate": got["candidate"]["id"],
            "round": got["round"],
            "decision": "accept",
            "idempotency_key": uuid.uuid4().hex,
            "time_spent_ms": 1000,
        }
        r = me.post(decisions_url, data=body, content_type="application/json")
        assert r.status_code == 201, r.content[:300]

    for _ in range(10):  # warm up: connection, caches, round 1
        get_next()
        submit()
    nexts, submits = [], []
    for _ in range(calls):
        t0 = time.perf_counter()
        get_next()
        nexts.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        submit()
        submits.append(time.perf_counter() - t0)
    get_next()  # hold one, so the review screen has a candidate to show
    cand, rnd = state["got"]["candidate"]["id"], state["got"]["round"]

    def page(client, url):
        def call():
            r = client.get(url)
            assert r.status_code == 200, (url, r.status_code)

        return call

    pages = {
        "progress API": (page(me, reverse("review_api:progress", args=[project.name])), page_calls),
        "review screen": (
            page(me, reverse("review:candidate", args=[project.name, cand]) + f"?round={rnd}"),
            page_calls,
        ),
        "review start page": (page(me, reverse("review:index")), page_calls),
        "admin project page": (page(boss, reverse("review:manage", args=[project.name])), admin_calls),
        "project page (pipeline), admin": (page(boss, reverse("projects:detail", args=[project.name])), admin_calls),
        "project page (pipeline), annotator": (page(me, reverse("projects:detail", args=[project.name])), admin_calls),
        "projects list (home)": (page(boss, "/"), admin_calls),
    }
    # The Django admin's lists of the tables that grow with the data (as the admin, a superuser, sees them): the first
    # page, and the same filtered to one direction.
    direction = project.directions.order_by("code").first()
    for label, url in ADMIN_LISTS:
        pages[f"admin list: {label}"] = (page(boss, url), admin_calls)
    pages["admin list: candidates of 1 direction"] = (
        page(boss, f"/admin/injection/candidate/?segment__direction__id__exact={direction.pk}"),
        admin_calls,
    )
    # The injection run's page (its flag counts) and the candidate list; one candidate in 7 is flagged.
    from injection.models import InjectionRun

    run = InjectionRun.objects.filter(project=project).order_by("pk").first()
    pages["injection run page"] = (page(boss, reverse("injection:run", args=[run.pk])), admin_calls)
    pages["candidate list (injection)"] = (page(boss, reverse("injection:candidates")), admin_calls)
    pages["agreement annotators page"] = (page(boss, reverse("agreement:annotators", args=[project.name])), admin_calls)
    from annotation.common.selectors import language_codes
    from annotation.review import selectors

    codes = language_codes(annotator)
    first = selectors.first_round(project)

    def scope_count():
        """Not a page: the plain count of round 1's pending candidates in the annotator's languages, the
        floor of any exact "remaining" that scans the queue (what a rewrite without counters could reach)."""
        selectors.round_scope(project, first).filter(segment__direction__target__code__in=codes).count()

    pages["scope count (floor)"] = (scope_count, page_calls)
    result = {"get-next": nexts, "submit": submits}
    worst = {"get-next": slowest_query(get_next), "submit": slowest_query(submit)}
    for name, (fn, n) in pages.items():
        fn()  # warm
        result[name] = timed(fn, n, budget_s)
        worst[name] = slowest_query(fn)
    return {"latency": result, "slowest_query": worst}


def check_counters(project, annotator) -> float:
    """The figures the pages read from the counters equal the exact count of the rows (the old queries):
    the counters of the generated rows are the triggers' work, not a recount's."""
    from annotation.common.selectors import language_codes
    from annotation.review import selectors

    t0 = time.perf_counter()
    codes = language_codes(annotator)
    for rnd in selectors.open_rounds(project):
        fast, exact = (
            selectors.progress(annotator, project, rnd, codes),
            selectors.exact_progress(annotator, project, rnd, codes),
        )
        assert fast == exact, (fast, exact)
    fast, exact = selectors.language_progress(project), selectors.exact_language_progress(project)
    assert fast == exact, (fast, exact)
    return time.perf_counter() - t0


def explain(sql: str) -> str:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        return "\n".join(row[0] for row in cur.fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes", default="1000,100000", help="candidate counts, ascending (the first is the baseline)"
    )
    parser.add_argument("--calls", type=int, default=200, help="get-next + submit pairs per size")
    parser.add_argument("--page-calls", type=int, default=20)
    parser.add_argument("--admin-calls", type=int, default=3, help="calls of the admin project page per size")
    parser.add_argument(
        "--page-budget-s", type=float, default=15.0, help="stop timing a page after this long (3 calls at least)"
    )
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--json", help="write the raw figures here")
    parser.add_argument("--explain", help="write EXPLAIN ANALYZE of each call's slowest query at each size here")
    parser.add_argument("--keep", action="store_true", help="keep the database")
    parser.add_argument("--db-name", default=DB_NAME, help="the benchmark's database (created and dropped)")
    parser.add_argument(
        "--reviewed",
        type=int,
        default=0,
        help="after the last size, give this many candidates a decision from 8 other annotators and measure again",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    db_url = recreate_database(args.admin_url, args.db_name)
    try:
        django_setup(db_url)
        project, directions, run, annotator, admin = setup_project()
        report, explains = {}, []
        for size in sizes:
            load_s = top_up(project, directions, run, size)
            from injection.models import Candidate

            n = Candidate.objects.filter(segment__project=project).count()
            m = measure(project, annotator, admin, args.calls, args.page_calls, args.admin_calls, args.page_budget_s)
            check_s = check_counters(project, annotator)
            report[size] = {"candidates": n, "load_s": load_s, "check_s": check_s} | m
            print(
                f"\n== {n:,} candidates (loaded in {load_s:.1f} s, counters kept by the triggers; "
                f"progress figures equal the exact count of the rows, checked in {check_s:.1f} s)",
                flush=True,
            )
            print_latencies(m["latency"], report[sizes[0]])
            for name, (secs, sql) in m["slowest_query"].items():
                print(f"  slowest query of {name}: {secs * 1000:.1f} ms", flush=True)
                if args.explain and sql.lstrip().upper().startswith("SELECT"):  # never re-run a write
                    explains.append(f"### {n:,} candidates — {name} ({secs * 1000:.1f} ms)\n{sql}\n\n{explain(sql)}\n")
        if args.reviewed:
            review_s = add_reviews(project, args.reviewed)
            from annotation.models import ReviewDecision

            decided = ReviewDecision.objects.filter(candidate__segment__project=project, source="annotator").count()
            refresh = time_figures_refresh(project)
            m = measure(project, annotator, admin, args.calls, args.page_calls, args.admin_calls, args.page_budget_s)
            check_s = check_counters(project, annotator)
            stats = (
                time_annotator_stats(project) | time_page_with_workers(project, admin) | time_agreement(project, admin)
            )
            key = f"{sizes[-1]}+{args.reviewed}"
            report[key] = {
                "candidates": n,
                "decisions": decided,
                "load_s": review_s,
                "check_s": check_s,
                "latency": m["latency"] | stats | refresh,
                "slowest_query": m["slowest_query"],
            }
            print(
                f"\n== {n:,} candidates and {decided:,} annotator decisions (inserted in {review_s:.1f} s; progress figures "
                f"equal the exact count, checked in {check_s:.1f} s; per-annotator statistics equal the Python computation)",
                flush=True,
            )
            print_latencies(report[key]["latency"], report[sizes[0]], width=26)
            for name, (secs, _sql) in m["slowest_query"].items():
                print(f"  slowest query of {name}: {secs * 1000:.1f} ms", flush=True)
        if args.explain:
            Path(args.explain).write_text("\n".join(explains), encoding="utf-8")
        if args.json:
            out = {
                str(k): {
                    "candidates": v["candidates"],
                    "load_s": v["load_s"],
                    "latency_ms": latency_summary(v["latency"]),
                }
                for k, v in report.items()
            }
            Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(args.admin_url, args.db_name)


if __name__ == "__main__":
    main()
