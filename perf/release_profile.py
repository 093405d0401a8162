"""Where a release's memory goes: one release written in this process (the steps ``manage.py release`` runs),
its resident set sampled every 20 ms and put down to the innermost release function running at the time.

Prints, per call of each profiled function (calls of the per-direction functions folded into one line), the
RSS when it started, the highest RSS seen while it was the innermost profiled call, and the RSS when it
returned; then the process's high-water mark. It is how docs/release-memory.md found the reads that grew
with the number of directions (the direction list, the card's agreement figures, the counts table).

Run on a database ``perf/bench_scale.py --keep`` left behind (project ``scale``), with a version not
released yet: ``DATABASE_URL=postgres://…/xq_scale_10 .venv/bin/python perf/release_profile.py --version
9.0.0 --out /tmp/profiled-release``.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROFILED = {
    "exports.release.services": (
        "release_begin",
        "release_direction_run",
        "release_finish",
        "release_content_make",
        "direction_stamp_get",
    ),
    "exports.benchmark.selectors": (
        "current_level_counts",
        "agreement_figures",
        "excluded_candidates",
        "transplanted_candidates",
    ),
    "exports.release.selectors": ("triplet_directions",),
    "exports.release.domain.release_files": ("finish_staged_release", "_write_systems", "_finish", "dataset_card"),
}
FOLDED = {"release_direction_run", "direction_stamp_get"}  # once per direction: one line each


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Profile:
    def __init__(self):
        self.stack = ["start"]
        self.rows: dict[str, dict] = {}
        self.calls = 0
        self.stopped = threading.Event()

    def note(self, label: str) -> None:
        now = round(rss_mb(), 1)
        row = self.rows.setdefault(label, {"in": now, "peak": now})
        row["peak"] = max(row["peak"], now)

    def sample(self) -> None:
        while not self.stopped.is_set():
            self.note(self.stack[-1])
            self.stopped.wait(0.02)

    def wrap(self, module, name: str) -> None:
        fn = getattr(module, name)

        @functools.wraps(fn)
        def profiled(*args, **kwargs):
            if name in FOLDED:
                label = name
            else:
                self.calls += 1
                label = f"{self.calls:03d} {name}"
            self.note(label)
            self.stack.append(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self.stack.pop()
                self.note(label)
                self.rows[label]["out"] = round(rss_mb(), 1)

        setattr(module, name, profiled)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", default="scale")
    parser.add_argument("--version", required=True, help="a version not released yet")
    parser.add_argument("--out", required=True, help="the release directory (new or empty)")
    args = parser.parse_args()
    profile = Profile()
    threading.Thread(target=profile.sample, daemon=True).start()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
    import importlib

    import django

    django.setup()
    from core.models import Project
    from exports.release import services

    for module_name, names in PROFILED.items():
        module = importlib.import_module(module_name)
        for name in names:
            profile.wrap(module, name)
    project = Project.objects.get(name=args.project)
    profile.stack.append("django started")
    started = time.perf_counter()
    services.release_create(project=project, version=args.version, out_dir=args.out)
    profile.stopped.set()
    for label, row in profile.rows.items():
        print(f"{label:<32} in {row['in']:>7} MB  peak {row['peak']:>7} MB  out {row.get('out', ''):>7} MB")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"high-water mark {peak:.1f} MB, {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
