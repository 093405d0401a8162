"""Scale benchmark: k × the shared XQ-MEval data through import → build → release → chrF++ → meta-evaluation.

Workload generator: replica ``r`` (0 … k−1) of the shared data is the same 36 candidate files and the same
decisions under new direction codes: replica 0 keeps ``en-de`` …, replica r ≥ 1 renames target language
``de`` to ``de_Qa..`` (``core.languages.replica_code``: a private-use ISO 15924 tag, so the code stands
for German with German's script, span unit and checks; zh/ja/lo replicas count characters). The real
candidates and the real decisions are carried over unchanged, so every rule (checks, merge, sampling)
applies as it does to the original: k = 10 is 90 directions, ~73,000 candidates, ~630,000 pseudo
translations.

Each stage runs as its own process, as it would in production, against a dedicated PostgreSQL database
``xq_scale_<k>`` (dropped and created on the server of ``DATABASE_URL``, then migrated, untimed):

  import    ``manage.py import_xqmeval [--jobs N | --writers N]`` (candidates, decisions, checks;
            ``--import-jobs N`` / ``--import-writers N``)
  build     ``manage.py build_benchmark --force``  (the merge)
  release   ``manage.py release``                  (parquet files, pseudo systems)
  score     ``.venv-scoring/bin/python -m scoring run --metrics chrF++`` (what a scoring worker runs)
  ingest    ``exports.scores.services.part_ingest`` per direction (MetricScore rows)
  metaeval  ``manage.py metaeval --metrics chrF++``

Per stage: wall seconds, CPU seconds of the process (user + system, from ``os.wait4``: less sensitive
to other people's load on a shared machine than wall time), peak memory (``ru_maxrss``, the resident-set
high-water mark of the stage process), and on the database side (server on this machine): the CPU seconds
of the PostgreSQL processes serving that database (``/proc``, sampled), the WAL written, checkpoints
forced by it, and rows read by sequential scans (a stage whose scans grow faster than its data has a
query that reads a whole table per unit of work). Each stage starts after a ``CHECKPOINT`` (untimed), so
it does not pay for flushing what the stage before it wrote. Per k: figures per pseudo translation (per
candidate for import) and the k = max / k = 1 ratios, of wall time, process CPU, and process + server CPU.

Run: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/xqmeval .venv/bin/python perf/bench_scale.py --k 1,3,10 [--until build] [--prefix xq_scale] [--json out.json]``
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = ("import", "build", "release", "score", "ingest", "metaeval")
METRIC = "chrF++"
PROJECT = "scale"
VERSION = "1.0.0"


# ---- workload generator (pure: no Django) --------------------------------------------------------------


def replica_language(language: str, replica: int) -> str:
    from core.domain.languages import replica_code

    return language if replica == 0 else replica_code(language, replica)


def generate(data: Path, out: Path, k: int) -> dict:
    """Write k replicas of the shared candidates (``out/candidates/*.parquet``) and ``out/decisions.csv``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src_dir = data / "candidates"
    (out / "candidates").mkdir(parents=True, exist_ok=True)
    candidates = 0
    for path in sorted(src_dir.glob("*.parquet")):
        table = pq.read_table(path)
        src, lang, etype = path.stem.split("-")
        for r in range(k):
            code = replica_language(lang, r)
            column = table.schema.get_field_index("language")
            replica = table.set_column(
                column, "language", pa.array([code] * table.num_rows, type=table.schema.field("language").type)
            )
            pq.write_table(replica, out / "candidates" / f"{src}-{code}-{etype}.parquet")
            candidates += table.num_rows
    with open(data / "decisions.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for r in range(k):
        for row in rows:
            writer.writerow({**row, "language": replica_language(row["language"], r)})
    (out / "decisions.csv").write_text(buf.getvalue(), encoding="utf-8")
    return {"candidates": candidates, "decisions": len(rows) * k, "directions": 9 * k}


# ---- databases ----------------------------------------------------------------------------------------


def database_url(base: str, name: str) -> str:
    parts = urlparse(base)
    return urlunparse(parts._replace(path="/" + name))


def recreate_database(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(base: str, name: str) -> None:
    import psycopg

    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---- stages --------------------------------------------------------------------------------------------


class ServerCpu:
    """CPU seconds spent by the PostgreSQL server processes working for one database (its backends and
    autovacuum workers), sampled from ``/proc`` while a stage runs: the stage's own process waits on them,
    so their CPU time is part of the stage's cost. Only for a server on this machine (0 otherwise); a
    backend that lives less than one sampling interval is missed."""

    def __init__(self, database: str, interval: float = 0.1):
        self.marker = f" {database} ".encode()
        self.interval = interval
        self.ticks: dict[int, int] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                    title = fh.read()
                if not title.startswith(b"postgres: ") or self.marker not in title + b" ":
                    continue
                with open(f"/proc/{entry.name}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
                self.ticks[int(entry.name)] = int(fields[11]) + int(fields[12])  # utime + stime
            except (OSError, ValueError, IndexError):
                continue  # the process ended while being read

    def _run(self) -> None:
        while not self.stop.is_set():
            self._sample()
            self.stop.wait(self.interval)

    def __enter__(self) -> ServerCpu:
        self._sample()
        self.before = dict(self.ticks)
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self._sample()

    @property
    def seconds(self) -> float:
        ticks = sum(t - self.before.get(pid, 0) for pid, t in self.ticks.items())
        return ticks / os.sysconf("SC_CLK_TCK")


def server_state(url: str) -> tuple[float, int, int]:
    """(WAL position in bytes, requested checkpoints so far, rows read by sequential scans in this
    database so far): a stage whose sequential-scan reads grow faster than its data has a query that
    scans a whole table per unit of work."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        lsn = conn.execute("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn").fetchone()[0]
        requested = conn.execute("SELECT checkpoints_req FROM pg_stat_bgwriter").fetchone()[0]
        conn.execute("SELECT pg_stat_clear_snapshot()")
        scanned = conn.execute("SELECT coalesce(sum(seq_tup_read), 0) FROM pg_stat_user_tables").fetchone()[0]
    return float(lsn), int(requested), int(scanned)


def checkpoint(url: str) -> None:
    """Flush what earlier stages left dirty in the server's buffers, so that a stage does not pay for the
    writes of the one before it (untimed; needs a superuser or pg_checkpoint)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def run_stage(name: str, cmd: list[str], env: dict, log: Path, database: str | None = None) -> dict:
    """Run one stage process; wall time, CPU time and peak RSS from the kernel (``wait4``), and the CPU
    time, WAL volume and requested checkpoints of the database server on the stage's behalf."""
    url = env["DATABASE_URL"] if database else None
    if url:
        checkpoint(url)
        wal_before, ckpt_before, scanned_before = server_state(url)
    server = ServerCpu(database or "\0")
    server.__enter__()
    started = time.perf_counter()
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n".encode())
        fh.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    server.__exit__()
    if proc.returncode != 0:
        raise SystemExit(f"stage {name} failed (exit {proc.returncode}); see {log}")
    figures = {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_mb": round(usage.ru_maxrss / 1024, 1),
    }
    if url:
        time.sleep(0.6)  # backends report their table statistics at most every 500 ms
        wal_after, ckpt_after, scanned_after = server_state(url)
        figures |= {
            "server_cpu_s": round(server.seconds, 2),
            "wal_mb": round((wal_after - wal_before) / 2**20, 1),
            "checkpoints_requested": ckpt_after - ckpt_before,
            "seq_scan_rows": scanned_after - scanned_before,
        }
    return figures


def ingest_stage(release_dir: str) -> None:
    """Stage body run inside its own process: ingest every direction's chrF++ part file."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
    import django

    django.setup()
    from core.models import Direction
    from exports.models import Release
    from exports.scores.services import part_ingest
    from scoring.api import part_path

    release = Release.objects.get(project__name=PROJECT, version=VERSION)
    total = 0
    for direction in Direction.objects.filter(projects__name=PROJECT).order_by("code"):
        total += part_ingest(
            release=release,
            metric=METRIC,
            direction=direction,
            path=part_path(Path(release_dir) / "scores", METRIC, direction.code),
        )
    print(f"ingested {total} scores")


def measure(
    k: int,
    data: Path,
    scratch: Path,
    base_url: str,
    keep: bool,
    *,
    prefix: str = "xq_scale",
    until: str = STAGES[-1],
    import_jobs: int = 1,
    import_writers: int = 0,
) -> dict:
    name = f"{prefix}_{k}"
    work = scratch / f"k{k}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    workload = generate(data, work, k)
    recreate_database(base_url, name)
    env = {
        **os.environ,
        "DATABASE_URL": database_url(base_url, name),
        "XQMEVAL_DATA_DIR": str(work / "data"),
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
        "CELERY_BROKER_URL": "",
    }
    env.pop("CELERY_BROKER_URL")
    py, manage = str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "manage.py")
    scoring_py = str(ROOT / ".venv-scoring" / "bin" / "python")
    release_dir = work / "release"
    subprocess.run([py, manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    commands = {
        "import": [
            py,
            manage,
            "import_xqmeval",
            PROJECT,
            str(work / "candidates"),
            "--decisions",
            str(work / "decisions.csv"),
            "--jobs",
            str(import_jobs),
            "--writers",
            str(import_writers),
            "-v0",
        ],
        "build": [py, manage, "build_benchmark", PROJECT, "--force", "-v0"],
        "release": [py, manage, "release", PROJECT, "--version", VERSION, "--out", str(release_dir), "-v0"],
        "score": [scoring_py, "-m", "scoring", "run", "--release", str(release_dir), "--metrics", METRIC, "--quiet"],
        "ingest": [py, str(Path(__file__).resolve()), "--stage", "ingest", "--release-dir", str(release_dir)],
        "metaeval": [py, manage, "metaeval", f"{PROJECT}@{VERSION}", "--metrics", METRIC, "--format", "json"],
    }
    stages = {}
    for stage in STAGES[: STAGES.index(until) + 1]:
        stages[stage] = run_stage(stage, commands[stage], env, work / f"{stage}.log", database=name)
        print(f"  k={k} {stage:<8} {stages[stage]}", file=sys.stderr)
    # the import command reports its own split: parsing/validation, checks, database writes
    split = re.search(
        r"time: read ([\d.]+) s, checks ([\d.]+) s, database writes ([\d.]+) s",
        (work / "import.log").read_text(encoding="utf-8"),
    )
    if (release_dir / "manifest.json").exists():
        manifest = json.loads((release_dir / "manifest.json").read_text(encoding="utf-8"))
        pseudo, release_mb = manifest["triplets"], round(sum(f["bytes"] for f in manifest["files"].values()) / 2**20, 1)
    else:  # stopped before the release: count what the build wrote
        pseudo, release_mb = pseudo_translations(env["DATABASE_URL"]), None
    figures = {
        "k": k,
        "import_jobs": import_jobs,
        "import_writers": import_writers,
        **workload,
        "pseudo_translations": pseudo,
        "release_mb": release_mb,
        "database_mb": database_mb(env["DATABASE_URL"]),
        "stages": stages,
    }
    for stage, s in stages.items():
        per = workload["candidates"] if stage == "import" else pseudo
        s["wall_us_per_item"] = round(1e6 * s["wall_s"] / per, 2)
        s["cpu_us_per_item"] = round(1e6 * s["cpu_s"] / per, 2)
        # the stage's process and the database server's work for it: what the stage costs in CPU
        s["total_cpu_us_per_item"] = round(1e6 * (s["cpu_s"] + s.get("server_cpu_s", 0)) / per, 2)
    figures["import_candidates_per_s"] = round(workload["candidates"] / stages["import"]["wall_s"])
    passes = re.search(
        r"time: validation pass ([\d.]+) s, writing pass ([\d.]+) s", (work / "import.log").read_text(encoding="utf-8")
    )
    if split:
        read_s, checks_s, write_s = (float(x) for x in split.groups())
        figures["import_split_s"] = {"read": read_s, "checks": checks_s, "write": write_s}
        figures["import_write_candidates_per_s"] = round(workload["candidates"] / write_s) if write_s else None
    elif passes:  # --writers: a validation pass over every file, then the writers (reading, checking, writing)
        validate_s, write_s = (float(x) for x in passes.groups())
        figures["import_split_s"] = {"validation pass": validate_s, "writing pass": write_s}
        figures["import_writing_pass_candidates_per_s"] = round(workload["candidates"] / write_s) if write_s else None
    if not keep:
        drop_database(base_url, name)
        shutil.rmtree(work, ignore_errors=True)
    return figures


def database_mb(url: str) -> float:
    """Size of the stage database on disk (tables, TOAST and indexes): what a deployment must provision."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return round(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 2**20, 1)


def pseudo_translations(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM exports_pseudotranslation").fetchone()[0]


def ratios(results: list[dict]) -> dict:
    first, last = results[0], results[-1]
    out = {}
    for stage in first["stages"]:
        a, b = first["stages"][stage], last["stages"][stage]
        out[stage] = {
            f"{key}_per_item": round(b[f"{key}_us_per_item"] / a[f"{key}_us_per_item"], 2)
            if a[f"{key}_us_per_item"]
            else None
            for key in ("wall", "cpu", "total_cpu")
        }
        out[stage]["peak_mb"] = round(b["peak_mb"] / a["peak_mb"], 2)
    return {f"k={last['k']} / k={first['k']}": out}


def table(results: list[dict]) -> str:
    lines = [
        "| k | directions | candidates | pseudo translations | stage | wall s | µs / item (wall) | µs / item (CPU) | µs / item (CPU + server) | peak MB | WAL MB |",
        "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for stage, s in r["stages"].items():
            lines.append(
                f"| {r['k']} | {r['directions']} | {r['candidates']:,} | {r['pseudo_translations']:,} | {stage} | {s['wall_s']} | "
                f"{s['wall_us_per_item']} | {s['cpu_us_per_item']} | {s['total_cpu_us_per_item']} | {s['peak_mb']} | {s.get('wal_mb', '')} |"
            )
    for r in results:
        lines.append("")
        lines.append(
            f"k={r['k']}: database {r['database_mb']:,} MB; import {r['import_candidates_per_s']:,} candidates/s end to end"
            + (
                f", database writes {r['import_write_candidates_per_s']:,} candidates/s (with decisions; split {r['import_split_s']})"
                if r.get("import_write_candidates_per_s")
                else ""
            )
            + (
                f", writing pass {r['import_writing_pass_candidates_per_s']:,} candidates/s ({r['import_split_s']})"
                if r.get("import_writing_pass_candidates_per_s")
                else ""
            )
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "xqmeval"))
    parser.add_argument("--k", default="1,3,10", help="replication factors, comma-separated (default 1,3,10)")
    parser.add_argument("--scratch", help="work directory (default: a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the databases and files")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--prefix", default="xq_scale", help="database names: <prefix>_<k> (default xq_scale)")
    parser.add_argument("--until", choices=STAGES, default=STAGES[-1], help="last stage to run (default: all)")
    parser.add_argument(
        "--import-jobs",
        type=int,
        default=1,
        help="import_xqmeval --jobs: worker processes reading and checking (default 1)",
    )
    parser.add_argument(
        "--import-writers",
        type=int,
        default=0,
        help="import_xqmeval --writers: processes writing whole languages (default 0: off)",
    )
    parser.add_argument("--stage", choices=["ingest"], help=argparse.SUPPRESS)
    parser.add_argument("--release-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage == "ingest":
        ingest_stage(args.release_dir)
        return
    base_url = os.environ.get("DATABASE_URL", "")
    if not base_url.startswith("postgres"):
        raise SystemExit(
            "set DATABASE_URL to a PostgreSQL server (postgres://…); databases xq_scale_<k> are created on it"
        )
    scratch = Path(args.scratch) if args.scratch else Path(tempfile.mkdtemp(prefix="bench-scale-"))
    results = []
    for k in [int(x) for x in args.k.split(",")]:
        results.append(
            measure(
                k,
                Path(args.data),
                scratch,
                base_url,
                args.keep,
                prefix=args.prefix,
                until=args.until,
                import_jobs=args.import_jobs,
                import_writers=args.import_writers,
            )
        )
    report = {"results": results, "ratios": ratios(results) if len(results) > 1 else {}, "cpus": os.cpu_count()}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(table(results))
    print(json.dumps(report["ratios"], indent=2))


if __name__ == "__main__":
    main()
