"""What the change logs' triggers (the review log, ``annotation.review.changes_sql``, and the flag log,
``injection.changes_sql``) cost the writers they watch.

On a fresh PostgreSQL database (``xq_change_log_cost``, dropped at the end) with ``--candidates`` generated
candidates (as ``bench_review_scale`` makes them), alternately with the logs' candidate-update triggers
and the review log's decision-insert trigger disabled and enabled (every other trigger, the review tally's included, stays on):

- an ``UPDATE`` of every candidate's status (the logs write nothing: status is neither a reported column
  nor a flag; each trigger still joins the statement's old and new rows), twice, the faster of the two;
- a ``COPY`` of one decision per candidate (one join of the statement's rows to their candidates and
  segments), rolled back.

    .venv/bin/python perf/bench_change_log.py --candidates 400000 --runs 4
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_review_scale as scale

TRIGGERS = [
    ("injection_candidate", "xq_change_candidate"),
    ("injection_candidate", "xq_flags_candidate_update"),
    ("annotation_reviewdecision", "xq_change_decision_insert"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=400_000)
    parser.add_argument("--runs", type=int, default=4, help="alternating off/on pairs")
    parser.add_argument(
        "--admin-url", default=os.environ.get("BENCH_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    args = parser.parse_args()
    db_url = scale.recreate_database(args.admin_url, "xq_change_log_cost")
    try:
        scale.django_setup(db_url)
        from django.db import connection, transaction

        from annotation.models import ReviewDecision
        from core import bulk
        from injection.models import Candidate

        project, directions, run, annotator, _admin = scale.setup_project()
        scale.top_up(project, directions, run, args.candidates)
        ids = list(Candidate.objects.filter(segment__project=project).values_list("id", flat=True))

        def update(status: str) -> float:
            with transaction.atomic(), connection.cursor() as cur:
                t0 = time.perf_counter()
                cur.execute("UPDATE injection_candidate SET status = %s", [status])
                return time.perf_counter() - t0

        def copy() -> float:
            with transaction.atomic():
                t0 = time.perf_counter()
                bulk.insert_dicts(
                    ReviewDecision,
                    (
                        {"candidate_id": i, "reviewer_id": annotator.pk, "decision": "accept", "source": "annotator"}
                        for i in ids
                    ),
                )
                seconds = time.perf_counter() - t0
                transaction.set_rollback(True)
            return seconds

        def switch(on: bool) -> None:
            with connection.cursor() as cur:
                for table, name in TRIGGERS:
                    cur.execute(f"ALTER TABLE {table} {'ENABLE' if on else 'DISABLE'} TRIGGER {name}")

        results: dict[bool, dict[str, list[float]]] = {
            False: {"update": [], "copy": []},
            True: {"update": [], "copy": []},
        }
        for _ in range(args.runs):
            for on in (False, True):
                switch(on)
                results[on]["update"].append(min(update("accepted"), update("pending")))
                results[on]["copy"].append(copy())
                print(
                    f"log {'on ' if on else 'off'}: status update of {len(ids):,} candidates {results[on]['update'][-1]:.2f} s, "
                    f"COPY of {len(ids):,} decisions {results[on]['copy'][-1]:.2f} s",
                    flush=True,
                )
        switch(True)
        for what in ("update", "copy"):
            off, on = sorted(results[False][what]), sorted(results[True][what])
            print(
                f"{what}: off {off[0]:.2f}–{off[-1]:.2f} s, on {on[0]:.2f}–{on[-1]:.2f} s; "
                f"median ratio {on[len(on) // 2] / off[len(off) // 2]:.2f}"
            )
    finally:
        from django.db import connections

        connections.close_all()
        scale.drop_database(args.admin_url, "xq_change_log_cost")


if __name__ == "__main__":
    main()
