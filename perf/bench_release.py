"""Import, merge and release of the whole shared XQ-MEval data (9 directions, ~62,900 pseudo translations).

Targets (issue 6): merge (``build_benchmark``, database writes included) ≤ 15 s, release ≤ 10 s. Runs
against a fresh SQLite file in a temporary directory (or the database of ``DATABASE_URL`` when
``--use-database-url`` is given: it must be an empty, migrated scratch database). Baselines measured in
the same run, for ratios that survive a busier machine:

- merge: ``naive`` = the pure enumeration of all subsets of each gold pair's pool with pairwise conflict
  checks (``itertools.combinations`` + ``spans_conflict``), counting only, no texts, no database;
- release: ``read`` = reading every pseudo translation with its gold pair through the ORM (``values()``),
  the least a release must do.

Also: the incremental rebuild with nothing changed and after one changed decision, re-exporting the same
version (must give the same bytes) and the release with JSONL and TSV.

Run: ``.venv/bin/python perf/bench_release.py [--data ../shared/data/xqmeval] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "xqmeval"))
    parser.add_argument("--use-database-url", action="store_true", help="use DATABASE_URL (an empty scratch database)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-release-"))
    if not args.use_database_url:
        os.environ.pop("DATABASE_URL", None)
        os.environ["XQMEVAL_DATA_DIR"] = str(scratch)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    figures = run(Path(args.data), scratch)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for key, value in figures.items():
            print(f"{key:<38} {value}")


def timed(fn, *a, **kw):
    start = time.perf_counter()
    result = fn(*a, **kw)
    return time.perf_counter() - start, result


def naive_counts(pools) -> int:
    import itertools

    from core.domain.units import spans_conflict

    total = 0
    for spans in pools:
        total += 1
        for k in range(1, 6):
            for combo in itertools.combinations(spans, k):
                if all(not spans_conflict(a, b) for a, b in itertools.combinations(combo, 2)):
                    total += 1
    return total


def run(data: Path, scratch: Path) -> dict:
    from annotation.review.xqmeval_import.services import xqmeval_import
    from core.models import Project
    from exports.benchmark.services import build_run
    from exports.models import PseudoTranslation
    from exports.release import services
    from exports.release.domain.release_files import sha256_file
    from injection.models import Candidate

    t_import, _ = timed(
        xqmeval_import, project_name="bench", directory=data / "candidates", decisions_path=data / "decisions.csv"
    )
    project = Project.objects.get(name="bench")

    t_merge, result = timed(build_run, project=project)
    t_noop, noop = timed(build_run, project=project)
    victim = Candidate.objects.filter(segment__project=project, status="accepted").order_by("id").first()
    Candidate.objects.filter(pk=victim.pk).update(status="rejected")
    t_one, one = timed(build_run, project=project)

    # the span each candidate was placed at: a transplanted one's edit may sit elsewhere than its stored span
    pools = _placed_pools(project)
    t_naive, naive_total = timed(naive_counts, pools)
    assert naive_total == PseudoTranslation.objects.filter(segment__project=project).count(), "naive count disagrees"

    t_read, _ = timed(
        lambda: list(
            PseudoTranslation.objects.filter(segment__project=project).values(
                "text", "marked_text", "spans", "segment__source", "segment__reference"
            )
        )
    )
    t_release, release = timed(services.release_create, project=project, version="1.0.0", out_dir=scratch / "r1")
    t_again, _ = timed(services.release_create, project=project, version="1.0.0", out_dir=scratch / "r2")
    same = all(sha256_file(scratch / "r1" / p) == sha256_file(scratch / "r2" / p) for p in release.manifest["files"])
    t_formats, _ = timed(
        services.release_create, project=project, version="1.0.0", out_dir=scratch / "r3", formats=("jsonl", "tsv")
    )

    return {
        "pseudo translations": result.pseudo_created,
        "gold pairs": result.segments,
        "excluded candidates": len(result.excluded),
        "import_xqmeval s": round(t_import, 2),
        "merge (build_benchmark) s": round(t_merge, 2),
        "merge target s": 15,
        "merge / naive-count baseline": round(t_merge / t_naive, 2),
        "naive-count baseline s": round(t_naive, 2),
        "rebuild, nothing changed s": round(t_noop, 2),
        "rebuild, one decision changed s": round(t_one, 2),
        "rebuilt gold pairs (one change)": one.rebuilt,
        "unchanged gold pairs (no change)": noop.unchanged,
        "release s": round(t_release, 2),
        "release target s": 10,
        "release / ORM-read baseline": round(t_release / t_read, 2),
        "ORM-read baseline s": round(t_read, 2),
        "re-export same version s": round(t_again, 2),
        "re-export byte-identical": same,
        "release with jsonl+tsv s": round(t_formats, 2),
        "triplets released": release.manifest["triplets"],
        "systems (mono, multi)": [
            release.manifest["systems"]["monolingual"],
            release.manifest["systems"]["multilingual"],
        ],
        "content hash": release.content_hash,
    }


def _placed_pools(project):
    """Per gold pair, the spans of the candidates the merge placed: the pool but those the build excluded, a
    transplanted one at the span its edit was placed at (``CandidatePlacement``)."""
    from collections import defaultdict

    from annotation.review.selectors import pool_candidates
    from core.models import GoldSegment

    by_segment = defaultdict(list)
    rows = (
        pool_candidates(project)
        .exclude(placement__outcome="excluded")
        .values_list("segment_id", "span_start", "span_end", "placement__span_start", "placement__span_end")
    )
    for segment_id, start, end, placed_start, placed_end in rows:
        by_segment[segment_id].append((start, end) if placed_start is None else (placed_start, placed_end))
    return [
        by_segment.get(seg_id, [])
        for seg_id in GoldSegment.objects.filter(project=project).values_list("id", flat=True)
    ]


if __name__ == "__main__":
    main()
