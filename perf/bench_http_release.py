"""A release staged by a release worker over HTTP against the release staged on the shared file system, in
the same run (issue 40, release part).

The whole shared XQ-MEval data (every direction) is imported and merged into a fresh PostgreSQL database;
gunicorn serves the platform on loopback (``DB_CONN_MAX_AGE=60`` as in production). Each repetition writes
one release by each path, alternating which goes first, into empty directories:

- shared file system: ``release_create`` in this process (``release_begin``, ``release_direction_run`` per
  direction, ``release_finish``: what the chord's tasks run on the platform's workers);
- HTTP: ``release_begin`` here, then one worker process (``.venv``, no database in its environment, and no
  Django: ``exports.release.transfer`` only) stages every direction in turn as a release worker takes
  task after task (the row stream, the release writer on its own disk, the archive uploaded and checked by
  the platform), then ``release_finish`` here.

Reported: each path's seconds (begin and finish included), their ratio (shared / HTTP: 1.0 means no
overhead), the worker's seconds and the bytes it uploaded; the two releases must have the same content
hash and the same data files, byte for byte.

    .venv/bin/python perf/bench_http_release.py [--repeat 2] [--json OUT]

Needs PostgreSQL (``--admin-url``, default postgres://postgres@127.0.0.1:5432/postgres); it creates and
drops its own database ``xqmeval_bench_http_release``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from serving import gunicorn_serve  # perf/serving.py, beside this script

REPO = Path(__file__).resolve().parent.parent
DB_NAME = "xqmeval_bench_http_release"
SHARED = Path(os.environ.get("XQMEVAL_SHARED_DATA", REPO.parent / "shared" / "data" / "xqmeval"))

# One release worker process: every direction in turn; prints one JSON line.
INNER = """
import json, sys, time
from pathlib import Path
from exports.release import transfer
args = json.loads(sys.argv[1])
platform = transfer.ReleasePlatform(url=args["url"], token=args["token"], data_dir=Path(args["work"]))
_ = platform.http  # a worker makes its client once, when it starts
t = time.perf_counter()
sent = 0
for direction_code in args["directions"]:
    job = args["jobs"][direction_code]  # the job token its task would carry
    sent += transfer.direction_stage(platform, release_id=args["release"], direction_code=direction_code, job_token=job)[
        "archive_bytes"
    ]
print(json.dumps({"seconds": time.perf_counter() - t, "bytes": sent, "django": "django" in sys.modules}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--admin-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    import psycopg

    with tempfile.TemporaryDirectory(prefix="bench-http-release-") as tmp:
        tmp = Path(tmp)
        with psycopg.connect(args.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")},
            "DATABASE_URL": args.admin_url.rsplit("/", 1)[0] + "/" + DB_NAME,
            "XQMEVAL_DATA_DIR": str(tmp / "web"),
            "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
            "ALLOWED_HOSTS": "127.0.0.1",
            "DB_CONN_MAX_AGE": "60",
            "RELEASE_WORKERS": "http",
            "PYTHONPATH": str(REPO),
        }
        os.environ.update(env)
        server = None
        try:
            subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
            sys.path.insert(0, str(REPO))
            import django

            django.setup()
            from annotation.review.xqmeval_import.services import xqmeval_import
            from core.models import Project
            from exports.benchmark.services import build_run
            from exports.release import services
            from exports.workers.grants import JobScope, job_token_issue
            from exports.workers.services import token_create

            xqmeval_import(
                project_name="bench", directory=SHARED / "candidates", decisions_path=SHARED / "decisions.csv"
            )
            project = Project.objects.get(name="bench")
            build_run(project=project)
            _, secret = token_create(name="bench")
            server, url = gunicorn_serve(env)
            worker_env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": os.environ.get("HOME", ""),
                "PYTHONPATH": str(REPO),
                "DATABASE_URL": "postgres://no-database@127.0.0.1:9/unreachable",
            }

            def shared(rep: int):
                t = time.perf_counter()
                release = services.release_create(project=project, version=f"s{rep}", out_dir=tmp / f"shared{rep}")
                return time.perf_counter() - t, release, {}

            def http(rep: int):
                t = time.perf_counter()
                job = services.release_begin(project=project, version=f"h{rep}", out_dir=tmp / f"http{rep}")
                services.release_job_record(job=job)
                inner = {"url": url, "token": secret, "release": job.release_id, "directions": list(job.todo)}
                inner["jobs"] = {d: job_token_issue(JobScope("release", job.release_id, d)) for d in job.todo}
                inner["work"] = str(tmp / f"worker{rep}")
                done = subprocess.run(
                    [sys.executable, "-c", INNER, json.dumps(inner)],
                    cwd=REPO,
                    env=worker_env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                worker = json.loads(done.stdout.strip().splitlines()[-1])
                release = services.release_finish(job=job)
                return time.perf_counter() - t, release, worker

            totals = {"shared": 0.0, "http": 0.0, "worker": 0.0}
            sent = 0
            for rep in range(args.repeat + 1):  # the first round warms both paths up (untimed)
                order = [("shared", shared), ("http", http)] if rep % 2 == 0 else [("http", http), ("shared", shared)]
                out = {}
                for name, path in order:
                    seconds, release, worker = path(rep)
                    out[name] = release
                    if rep:
                        totals[name] += seconds
                        if worker:
                            totals["worker"] += worker["seconds"]
                            sent = worker["bytes"]
                            assert not worker["django"], "the release worker imported Django"
                a, b = Path(out["shared"].path), Path(out["http"].path)
                assert out["shared"].content_hash == out["http"].content_hash
                data_files = [p for p in out["shared"].manifest["files"] if p not in ("README.md", "manifest.json")]
                assert all((a / p).read_bytes() == (b / p).read_bytes() for p in data_files), "data files differ"
            figures = {
                "directions": len(out["shared"].directions),
                "triplets": out["shared"].manifest["triplets"],
                "repeat": args.repeat,
                "seconds": {k: round(v, 2) for k, v in totals.items()},
                "ratio_shared_over_http": round(totals["shared"] / totals["http"], 3),
                "uploaded_bytes_per_release": sent,
                "release_bytes": sum(f["bytes"] for f in out["shared"].manifest["files"].values()),
                "same_content_hash_and_data_files": True,
                "cpu": os.cpu_count(),
            }
            print(json.dumps(figures, indent=2))
            if args.json:
                Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        finally:
            if server is not None:
                os.killpg(server.pid, 15)
                server.wait(20)
            from django.db import connections

            connections.close_all()
            with psycopg.connect(args.admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
