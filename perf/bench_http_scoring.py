"""Scoring throughput over HTTP against the shared file system, in the same run (issue 40: ≥ 0.95).

A release built from the shared XQ-MEval candidates (every direction, ``scoring.tests.releases.
write_release_from_shared``, its manifest listing each file's sha256 as a built release's does) is served by
the platform (PostgreSQL + gunicorn on loopback, warmed up). One .venv-scoring process per repetition plays a
scoring worker taking task after task (its HTTP client and libraries made once, as a worker's are): for each
direction chrF++ is scored by both paths, alternating which goes first, exactly as a scoring task does it:

- shared file system: ``open_release(release.path)`` and ``score_direction`` into a scores directory
  (nothing copied);
- HTTP: ``scoring.transfer.Platform.fetch_release`` (the release's listing once per process, the direction
  file, its sha256 checked) into the worker's own directory, ``score_direction`` there, and ``upload_part``
  (the platform verifies and stores it).

Reported: triplets per second of each path over all directions, their ratio (HTTP / shared), and the HTTP
path's seconds in fetching, scoring and uploading. Each repetition starts from empty output and worker
directories, so nothing is skipped or cached.

    .venv/bin/python perf/bench_http_scoring.py [--repeat 3] [--json OUT]

Needs PostgreSQL (``--admin-url``, default postgres://postgres@127.0.0.1:5432/postgres); it creates and
drops its own database ``xqmeval_bench_http``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from serving import gunicorn_serve  # perf/serving.py, beside this script

REPO = Path(__file__).resolve().parent.parent
SCORING_PYTHON = REPO / ".venv-scoring" / "bin" / "python"
DB_NAME = "xqmeval_bench_http"
SHARED = Path(os.environ.get("XQMEVAL_SHARED_DATA", REPO.parent / "shared" / "data" / "xqmeval"))

SETUP = """
import json, sys
from pathlib import Path
from core.services import direction_ensure, project_directions_add, project_ensure
from exports.models import Release, ScoringJob
from exports.release.domain.release_files import sha256_file
from exports.workers import services as worker_services
from exports.workers.grants import JobScope, job_token_issue
root = Path(sys.argv[1])
manifest = json.loads((root / "manifest.json").read_text())
# as a release the platform builds: each file with its sha256 and size (exports.release.domain.release_files)
manifest["files"] = {
    f"{d}/test.parquet": {"sha256": sha256_file(root / d / "test.parquet"), "bytes": (root / d / "test.parquet").stat().st_size}
    for d in manifest["counts"]
}
codes = sorted(manifest["counts"])
project, _ = project_ensure(name="bench", title="bench")
project_directions_add(project=project, codes=codes)
release = Release.objects.create(project=project, version="bench", status="ready", path=str(root), manifest=manifest)
for code in codes:
    ScoringJob.objects.create(release=release, metric="chrF++", direction=direction_ensure(code=code))
_, secret = worker_services.token_create(name="bench")
jobs = {code: job_token_issue(JobScope("scoring", release.pk, code, "chrF++")) for code in codes}  # what tasks carry
print(json.dumps({"release": release.pk, "token": secret, "directions": codes, "jobs": jobs}))
"""

# Run in .venv-scoring, as one worker process takes task after task: every direction by both paths (which
# goes first alternates), each into empty directories; prints one JSON line of summed seconds.
INNER = """
import json, sys, time
from pathlib import Path
from scoring.release import open_release
from scoring.runner import ScoreOptions, part_path, score_direction
from scoring.transfer import Platform
args = json.loads(sys.argv[1])
work = Path(args["work"])
opts = ScoreOptions()
# A worker makes its HTTP client once, when it starts (scoring.worker), not per task.
platform = Platform(url=args["url"], token=args["token"], data_dir=work / "worker")
platform.connect()
# and imports its libraries once: neither path pays them
from scoring.registry import Segment, get_metric
get_metric("chrF++").build().score([Segment(src="a", mt="b", ref="b", target_lang="de", source_lang="en")])
totals = {"shared": 0.0, "http": 0.0, "fetch": 0.0, "score": 0.0, "upload": 0.0}

def shared(direction):
    t = time.perf_counter()
    score_direction(open_release(args["root"]), "chrF++", direction, work / "shared-scores", opts)
    totals["shared"] += time.perf_counter() - t

def http(direction):
    t = time.perf_counter()
    root = platform.fetch_release(args["release"], [direction], job_token=args["jobs"][direction])
    t1 = time.perf_counter()
    out = platform.scores_dir(args["release"])
    score_direction(open_release(root), "chrF++", direction, out, opts, assemble=False)  # as the worker does
    t2 = time.perf_counter()
    platform.upload_part(
        args["release"], "chrF++", direction, part_path(out, "chrF++", direction), args["jobs"][direction]
    )
    t3 = time.perf_counter()
    totals["http"] += t3 - t
    totals["fetch"] += t1 - t
    totals["score"] += t2 - t1
    totals["upload"] += t3 - t2

for i, direction in enumerate(args["directions"]):
    for path in ([shared, http] if (i + args["rep"]) % 2 == 0 else [http, shared]):
        path(direction)
print(json.dumps(totals))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--admin-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--directions", help="comma-separated (default: every direction of the shared data)")
    args = parser.parse_args()
    import psycopg

    sys.path.insert(0, str(REPO))
    from scoring.tests.releases import write_release_from_shared

    directions = sorted({p.name.rsplit("-", 1)[0] for p in (SHARED / "candidates").glob("*.parquet")})
    if args.directions:
        directions = [d for d in directions if d in args.directions.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        tmp = Path(tmp)
        root = write_release_from_shared(tmp / "web" / "releases" / "bench", SHARED, directions=directions)
        with psycopg.connect(args.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{DB_NAME}"')
        env = {
            **{k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")},
            "DATABASE_URL": args.admin_url.rsplit("/", 1)[0] + "/" + DB_NAME,
            "XQMEVAL_DATA_DIR": str(tmp / "web"),
            "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
            "ALLOWED_HOSTS": "127.0.0.1",
            "LOG_LEVEL": "WARNING",
            "DB_CONN_MAX_AGE": "60",  # as the production runbook (docs/operations.md) runs gunicorn
            "PYTHONPATH": str(REPO),
        }
        server = None
        try:
            manage = [sys.executable, "manage.py"]
            subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=REPO, env=env, check=True)
            made = subprocess.run(
                [*manage, "shell", "-c", SETUP.replace("sys.argv[1]", repr(str(root)))],
                cwd=REPO,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            setup = json.loads(made.stdout.strip().splitlines()[-1])
            server, url = gunicorn_serve(env)
            import httpx

            # a serving platform is warm: each gunicorn worker has loaded its URL configuration and views
            first = setup["directions"][0]
            headers = {"Authorization": f"Bearer {setup['token']}", "X-Worker-Job": setup["jobs"][first]}
            for _ in range(8):
                httpx.get(f"{url}/api/workers/releases/{setup['release']}/", headers=headers, timeout=30)
            counts = json.loads((root / "manifest.json").read_text())["counts"]

            def run(directions: list[str], work: Path, rep: int) -> dict:
                inner = {
                    "root": str(root),
                    "work": str(work),
                    "url": url,
                    "token": setup["token"],
                    "release": setup["release"],
                    "jobs": setup["jobs"],
                    "directions": directions,
                    "rep": rep,
                }
                done = subprocess.run(
                    [str(SCORING_PYTHON), "-c", INNER, json.dumps(inner)],
                    cwd=REPO,
                    env=worker_env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                return json.loads(done.stdout.strip().splitlines()[-1])

            worker_env = {
                "PATH": os.environ.get("PATH", ""),
                "HOME": os.environ.get("HOME", ""),
                "PYTHONPATH": str(REPO),
            }
            run(setup["directions"][:1], tmp / "warmup", 0)  # untimed: the server has taken an upload (pyarrow)
            run(setup["directions"][:1], tmp / "warmup2", 1)
            totals: dict[str, float] = {}
            for rep in range(args.repeat):
                for k, v in run(setup["directions"], tmp / f"rep{rep}", rep).items():
                    totals[k] = totals.get(k, 0.0) + v
            http_parts = {k: totals[k] for k in ("fetch", "score", "upload")}
            triplets = args.repeat * sum(counts[d] for d in setup["directions"])
            figures = {
                "metric": "chrF++",
                "directions": setup["directions"],
                "triplets_per_repeat": sum(counts.values()),
                "repeat": args.repeat,
                "shared_triplets_per_s": round(triplets / totals["shared"], 1),
                "http_triplets_per_s": round(triplets / totals["http"], 1),
                "ratio_http_over_shared": round(totals["shared"] / totals["http"], 4),
                "seconds": {k: round(v, 2) for k, v in totals.items()},
                "http_seconds": {k: round(v, 2) for k, v in http_parts.items()},
                "cpu": os.cpu_count(),
            }
            print(json.dumps(figures, indent=2))
            if args.json:
                Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
        finally:
            if server is not None:
                os.killpg(server.pid, 15)
                server.wait(20)
            with psycopg.connect(args.admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
