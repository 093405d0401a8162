"""Demo data. Idempotent: running it again changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from annotation.review.xqmeval_import.services import xqmeval_import
from core.corpus.domain import CorpusRow
from core.corpus.services import corpus_rows_import
from core.models import Project
from core.services import project_directions_add, project_ensure, user_create
from exports.benchmark.selectors import latest_build
from exports.benchmark.services import build_run
from exports.models import BenchmarkBuild, Release
from exports.release.services import release_create
from injection.models import InjectionRun
from injection.services import RunSpec, run_execute, run_plan

CORPUS = Path(__file__).with_name("corpus.jsonl")
TARGETS = ("de", "zh", "ar")
PROJECT = "demo"
# username, password, role, languages — printed by the command; demo only, never for production.
ACCOUNTS = [
    ("admin", "demo-admin-pass", "admin", ()),
    ("anna", "demo-anna-pass", "annotator", ("de", "ar")),
    ("li", "demo-li-pass", "annotator", ("zh", "de")),
    # the demo project asks 2 reviewers per candidate: a third annotator gives zh and ar their second (#46.2)
    ("omar", "demo-omar-pass", "annotator", ("ar", "zh")),
]

SHARED_XQMEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "xqmeval"


def inject_rule_candidates(project, log) -> None:
    """Single-error candidates from the offline rule backend, so the review queues have work."""
    if InjectionRun.objects.filter(project=project, name="demo-rule-mqm").exists():
        log("  rule-based candidates already there")
        return
    run = run_execute(
        run_id=run_plan(spec=RunSpec(project=project, kind="mqm", backend="rule", name="demo-rule-mqm", seed=42)).pk
    )
    log(f"  {run.done} candidates from the rule backend ({run.failed} items without a candidate, reasons recorded)")


def import_release_xqmeval(project, log, shared: Path = SHARED_XQMEVAL) -> None:
    """Where ../shared/data/xqmeval exists: the real XQ-MEval release as project 'xqmeval', merged into pseudo
    translations and released as version 1.0.0, so the benchmark and scores pages have content."""
    if not (shared / "candidates").is_dir():
        log(f"  skipped: no XQ-MEval data at {shared}")
        return
    result = xqmeval_import(
        project_name="xqmeval", directory=shared / "candidates", decisions_path=shared / "decisions.csv"
    )
    log(f"  xqmeval: {result.candidates_created} candidates imported, {result.candidates_unchanged} unchanged")
    xq = Project.objects.get(name="xqmeval")
    latest = latest_build(xq)
    if result.candidates_created or latest is None or latest.status != BenchmarkBuild.Status.DONE:
        # a recorded build, as the page's Build button and the command make: the benchmark page shows it
        built = build_run(project=xq).build
        log(
            f"  xqmeval: benchmark built ({built.rebuilt_segments} gold pairs rebuilt, {built.pseudo_created} pseudo translations written)"
        )
    if not Release.objects.filter(project=xq, version="1.0.0").exists():
        release = release_create(project=xq, version="1.0.0")
        log(f"  xqmeval: release {release.version} at {release.path}")


# Demo steps of later stages: (name, function(project, log)); each is idempotent.
DEMO_STEPS: list[tuple[str, Callable]] = [
    ("rule-based MQM candidates for the demo corpus", inject_rule_candidates),
    ("the XQ-MEval release: import, merge, release", import_release_xqmeval),
]


def demo_corpus() -> dict[str, list[CorpusRow]]:
    rows: dict[str, list[CorpusRow]] = {t: [] for t in TARGETS}
    for number, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), start=1):
        record = json.loads(line)
        for target in TARGETS:
            rows[target].append(
                CorpusRow(record["id"], record["source"], record[target], f"{CORPUS.name} line {number}")
            )
    return rows


def setup_demo(log: Callable[[str], None] = print) -> None:
    users = {
        name: user_create(username=name, password=password, role=role, languages=langs)
        for name, password, role, langs in ACCOUNTS
    }
    project, _ = project_ensure(
        name=PROJECT, title="Demo: 20 sentences into German, Chinese and Arabic", owner=users["admin"]
    )
    project_directions_add(project=project, codes=[f"en-{t}" for t in TARGETS])
    for target, rows in demo_corpus().items():
        result = corpus_rows_import(project=project, direction_code=f"en-{target}", rows=rows, source_name=CORPUS.name)
        log(f"en-{target}: {result.created} gold segments imported, {result.unchanged} unchanged")
    for name, step in DEMO_STEPS:
        log(f"demo step: {name}")
        step(project, log)
    log("demo accounts (demo only):")
    for name, password, role, langs in ACCOUNTS:
        log(f"  {name:6s} / {password:16s} {role}{' for ' + ', '.join(langs) if langs else ''}")
