"""The sha256 of every file of releases of the shared XQ-MEval data, to show that a change leaves releases
byte-identical: run it with the code before the change and with the code after, and compare the output.

Steps (``--step``):

- ``fresh``: migrate an empty database, import the shared data, build, release ``1.0.0``; then review
  rejects one pool candidate and one candidate's text changes outside its span (unplaceable from then on),
  the build runs again and ``1.0.1`` is released with JSONL and TSV too;
- ``again``: on a database a ``fresh`` run left (with any code): migrate (the new code's migrations convert
  the old code's rows), build, and release ``1.0.1`` again.

Prints one line per file (``<release>/<path> <sha256>``), then one line per candidate: its review record
(status, reason, flags, checks), which a build must leave alone. ``--code DIR`` imports the platform from
another checkout (e.g. ``git archive main``), so the same script runs against the code before a change.

Run: ``.venv/bin/python perf/release_hashes.py --step fresh --database-url postgres://…/scratch --out DIR``
(the database must exist and be empty).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--step", choices=("fresh", "again"), required=True)
    parser.add_argument("--code", default=str(ROOT), help="the checkout whose platform code runs")
    parser.add_argument(
        "--data", default=os.environ.get("XQMEVAL_SHARED_DATA", str(ROOT.parent / "shared" / "data" / "xqmeval"))
    )
    parser.add_argument("--check-code", action="store_true", help="only print where the platform code is imported from")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--out", required=True, help="folder the releases are written to (one subfolder each)")
    args = parser.parse_args()

    out = Path(args.out).resolve()
    code = Path(args.code).resolve()
    # from the checkout's own folder: Celery's loader puts the working directory first on sys.path
    os.chdir(code)
    sys.path.insert(0, str(code))
    os.environ["DATABASE_URL"] = args.database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "xqmeval.settings")
    import django

    django.setup()
    from django.core.management import call_command

    import exports.benchmark.services

    print("code", Path(exports.benchmark.services.__file__).resolve().parent.parent.parent, file=sys.stderr)
    if args.check_code:
        return

    call_command("migrate", verbosity=0)
    (fresh if args.step == "fresh" else again)(Path(args.data).resolve(), out)
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        print(path.relative_to(out).as_posix(), hashlib.sha256(path.read_bytes()).hexdigest())
    for line in candidate_records():
        print(line)


def fresh(data: Path, out: Path) -> None:
    from core.models import Project
    from injection.models import Candidate

    try:  # this code
        from annotation.review.xqmeval_import.services import xqmeval_import

        xqmeval_import(project_name="bench", directory=data / "candidates", decisions_path=data / "decisions.csv")
    except ImportError:  # a checkout from before issue 35 (the import's own room, <entity>_<action> names)
        from annotation.review.xqmeval_import import import_xqmeval

        import_xqmeval("bench", data / "candidates", data / "decisions.csv")
    project = Project.objects.get(name="bench")
    build(project)
    release(project, "1.0.0", out_dir=out / "1.0.0")
    pool = Candidate.objects.filter(segment__project=project, status="accepted", kind="mqm", is_gold=False)
    rejected = pool.filter(segment__direction__code="en-de").order_by("id").first()
    Candidate.objects.filter(pk=rejected.pk).update(
        status="rejected", status_reason="1/2 accepted; unanimous acceptance required"
    )
    changed = (
        pool.filter(segment__direction__code="en-de", span_start__gt=0).exclude(pk=rejected.pk).order_by("id").first()
    )
    Candidate.objects.filter(pk=changed.pk).update(text="Anders " + changed.text.split(" ", 1)[1])
    build(project)
    release(project, "1.0.1", out_dir=out / "1.0.1", formats=("jsonl", "tsv"))


def again(data: Path, out: Path) -> None:
    """``1.0.1`` again from the database a ``fresh`` run left, built by this code from the rows the
    migrations converted."""
    from core.models import Project

    project = Project.objects.get(name="bench")
    build(project)
    release(project, "1.0.1", out_dir=out / "1.0.1", formats=("jsonl", "tsv"))


def build(project) -> None:
    """Build ``project`` with the entry point of the checkout that runs: ``build_run`` since issue 35 made it
    the one way a build runs in a process, ``build_benchmark`` before (``--code`` may name such a checkout)."""
    from exports.benchmark import services

    if hasattr(services, "build_benchmark"):
        getattr(services, "build_benchmark")(project)  # noqa: B009  (by name: the old code's)
    else:
        services.build_run(project=project)


def release(project, version: str, **options) -> None:
    """Write a release with the checkout's entry point: ``release_create`` since issue 35 (keyword-only
    services), ``create_release`` before."""
    from exports.release import services

    if hasattr(services, "create_release"):
        getattr(services, "create_release")(project, version, **options)  # noqa: B009  (by name: the old code's)
    else:
        services.release_create(project=project, version=version, **options)


def candidate_records():
    """One line per candidate: its natural key and its review record (what a build must not change)."""
    from injection.models import Candidate

    rows = Candidate.objects.values_list(
        "segment__direction__code",
        "segment__external_id",
        "external_id",
        "kind",
        "error_type",
        "position",
        "status",
        "status_reason",
        "flags",
        "checks",
    )
    for row in sorted(rows, key=lambda r: tuple(map(str, r[:6]))):
        print_row = json.dumps(row, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        yield "candidate " + hashlib.sha256(print_row.encode()).hexdigest()[:16] + " " + "/".join(map(str, row[:6]))


if __name__ == "__main__":
    main()
