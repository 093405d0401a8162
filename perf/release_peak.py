"""Peak memory of the release stage alone, and the bytes it writes, on databases ``perf/bench_scale.py --keep``
left behind (its import and build done once). Each run is a new version (the staged path: direction by
direction, then the finishing step that draws the pseudo systems), in its own process; peak memory is the
process's resident-set high-water mark (``ru_maxrss`` from ``wait4``), which the load of other processes
on the machine does not change, unlike wall time.

Byte identity: the canonical files (triplet and system parquet files, exclusions) and the content hash
are compared with the release ``bench_scale.py`` wrote (``<scratch>/k<k>/release``); README and manifest
name the version, so they differ by design.

Run: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/xqmeval .venv/bin/python perf/release_peak.py
--scratch /tmp/scale --prefix xq_scale --k 1,10 --version 1.0.1 [--code DIR]`` (``--code``: another checkout
whose ``manage.py`` runs the release, e.g. the code before a change).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perf.bench_scale import PROJECT, database_url  # noqa: E402


def release_once(code: Path, url: str, work: Path, version: str) -> dict:
    out = work / f"release-{version}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "XQMEVAL_DATA_DIR": str(work / "data"),
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
    }
    env.pop("CELERY_BROKER_URL", None)
    cmd = [
        str(code / ".venv" / "bin" / "python"),
        str(code / "manage.py"),
        "release",
        PROJECT,
        "--version",
        version,
        "--out",
        str(out),
        "-v0",
    ]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=code, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"release {version} failed: {' '.join(cmd)}")
    mine = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    bench = json.loads((work / "release" / "manifest.json").read_text(encoding="utf-8"))
    differ = [p for p in bench["canonical_files"] if mine["files"][p]["sha256"] != bench["files"][p]["sha256"]]
    return {
        "peak_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: KiB
        "wall_s": round(time.perf_counter() - started, 1),
        "same_content_hash": mine["content_hash"] == bench["content_hash"],
        "canonical_files": len(bench["canonical_files"]),
        "canonical_files_differing": differ,
        "triplets": mine["triplets"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scratch", required=True, help="the --scratch of a bench_scale.py --keep run")
    parser.add_argument("--prefix", default="xq_scale")
    parser.add_argument("--k", default="1,10")
    parser.add_argument("--version", required=True, help="a version not released yet in those databases")
    parser.add_argument(
        "--code", default=str(ROOT), help="checkout whose manage.py runs the release (default: this one)"
    )
    args = parser.parse_args()
    base = os.environ["DATABASE_URL"]
    figures = {}
    for k in (int(x) for x in args.k.split(",")):
        url = database_url(base, f"{args.prefix}_{k}")
        figures[k] = release_once(Path(args.code), url, Path(args.scratch) / f"k{k}", args.version)
        print(f"k={k} {figures[k]}", file=sys.stderr)
    ks = sorted(figures)
    if len(ks) > 1:
        figures["peak_ratio"] = round(figures[ks[-1]]["peak_mb"] / figures[ks[0]]["peak_mb"], 3)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
