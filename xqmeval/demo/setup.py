"""Demo data. Idempotent: running it again changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from django.db import transaction

from annotation.review.services import decision_submit
from annotation.review.xqmeval_import.services import xqmeval_import
from core.corpus.domain import CorpusRow
from core.corpus.services import corpus_rows_import
from core.models import Project
from core.services import assignments_set, project_directions_add, project_ensure, user_create
from exports.benchmark.selectors import latest_build
from exports.benchmark.services import build_run
from exports.models import BenchmarkBuild, Release, ScoringJob
from exports.release.services import release_create
from exports.scores.tasks import start_scoring, worker_configured
from injection.models import Candidate, InjectionRun
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


# The demo's rule-based runs: (name, error type, position). Two candidates per sentence and direction, at the two
# ends of the reference, so they merge into pseudo translations of up to 2 errors and two error types reach the
# diagnostics, while the review stays one anyone finishes: 120 candidates, 80 decisions per printed annotator
# (#46.2). A project's own runs take every type at both positions.
DEMO_RUNS = [("demo-rule-mistranslation", "Mistranslation", "head"), ("demo-rule-omission", "Omission", "end")]


def inject_rule_candidates(project, log, shared: Path | None = None, score: bool = True) -> None:
    """Single-error candidates from the offline rule backend, so the review queues have work."""
    for name, error_type, position in DEMO_RUNS:
        if InjectionRun.objects.filter(project=project, name=name).exists():
            log(f"  {name}: candidates already there")
            continue
        spec = RunSpec(
            project=project,
            kind="mqm",
            backend="rule",
            name=name,
            seed=42,
            error_types=[error_type],
            positions=[position],
        )
        run = run_execute(run_id=run_plan(spec=spec).pk)
        log(f"  {name}: {run.done} candidates ({run.failed} items without a candidate, reasons recorded)")


def import_release_xqmeval(project, log, shared: Path = SHARED_XQMEVAL, score: bool = True) -> None:
    """Where ../shared/data/xqmeval exists: the real XQ-MEval release as project 'xqmeval', merged into pseudo
    translations and released as version 1.0.0, so the benchmark and scores pages have content."""
    if not (shared / "candidates").is_dir():
        log(f"  skipped: no XQ-MEval data at {shared}")
        return
    result = xqmeval_import(
        project_name="xqmeval", directory=shared / "candidates", decisions_path=shared / "decisions.csv"
    )
    log(f"  xqmeval: {result.candidates_created} candidates imported, {result.candidates_unchanged} unchanged")
    build_release_score(Project.objects.get(name="xqmeval"), log, score, rebuild=bool(result.candidates_created))


def build_release_score(project, log, score: bool, rebuild: bool = False) -> None:
    """Build ``project`` (unless a finished build is there and nothing new came in), release it as 1.0.0 once,
    and score that release here unless ``score`` is off."""
    latest = latest_build(project)
    if rebuild or latest is None or latest.status != BenchmarkBuild.Status.DONE:
        # a recorded build, as the page's Build button and the command make: the benchmark page shows it
        built = build_run(project=project).build
        log(
            f"  {project.name}: benchmark built ({built.rebuilt_segments} gold pairs rebuilt, {built.pseudo_created} pseudo translations written)"
        )
    release = Release.objects.filter(project=project, version="1.0.0").first()
    if release is None:
        release = release_create(project=project, version="1.0.0")
        log(f"  {project.name}: release {release.version} at {release.path}")
    if score:
        score_release_here(release, log)


# What set-up scores: the string metrics the web process scores itself (no broker, no scoring worker), so the
# scores, the leaderboard, the diagnostics and the meta-evaluation have content from the first visit.
DEMO_METRICS = ["chrF++", "BLEU"]


def score_release_here(release, log) -> None:
    """Score ``release`` with DEMO_METRICS in this process (jobs done already are left alone: idempotent)."""
    if release.status != Release.Status.READY:
        log(f"  {release}: not ready ({release.status}), not scored")
        return
    if worker_configured():  # a broker: scoring is the workers' (the Score button queues it), not set-up's
        log(f"  {release}: not scored here (a broker is configured: score it from its Scores page)")
        return
    with transaction.atomic():  # the jobs run once it commits, as a page's Score button runs them
        start_scoring(release=release, metrics=DEMO_METRICS)
    jobs = ScoringJob.objects.filter(release=release, metric__in=DEMO_METRICS)
    failed = [f"{j.metric} {j.direction.code}: {j.error}" for j in jobs.filter(status=ScoringJob.Status.FAILED)]
    log(
        f"  {release}: {', '.join(DEMO_METRICS)} scored ({jobs.count()} jobs{'; failed: ' + '; '.join(failed) if failed else ''})"
    )


# The reviewed demo: the demo corpus again, reviewed by two simulated reviewers, so that a clone without
# ../shared shows scores, the leaderboard, the diagnostics and the meta-evaluation from the first visit (#46.1),
# while the demo project itself stays the one a newcomer reviews. The reviewers' accounts have no usable password
# (no one logs in as them) and are assigned to this project alone, so they see nothing else.
REVIEWED_PROJECT = "demo-reviewed"
REVIEWED_TITLE = "Reviewed demo: the same sentences, decided by two simulated reviewers"
SIMULATED_REVIEWERS = ("demo-reviewer-1", "demo-reviewer-2")
# The second reviewer rejects every REJECT_EVERY-th candidate (by its item number), so the pool is not every
# candidate and agreement is not trivially perfect.
REJECT_EVERY = 7


def simulated_decision(reviewer: str, candidate: Candidate) -> tuple[str, str]:
    """(decision, reason) of a simulated reviewer: the first accepts everything, the second rejects a fixed share
    of the candidates as "meaning not changed"."""
    if reviewer == SIMULATED_REVIEWERS[1] and int(candidate.segment.external_id.split("-")[-1]) % REJECT_EVERY == 0:
        return "reject", "no_meaning_change"
    return "accept", ""


def review_simulated(project, log, shared: Path | None = None, score: bool = True) -> None:
    """The reviewed demo: imported, injected, decided by the simulated reviewers, built, released as 1.0.0 and
    (unless ``score`` is off) scored with DEMO_METRICS in this process."""
    reviewed, _ = project_ensure(name=REVIEWED_PROJECT, title=REVIEWED_TITLE, owner=project.owner)
    project_directions_add(project=reviewed, codes=[f"en-{t}" for t in TARGETS])
    reviewers = [user_create(username=name, password=None, languages=()) for name in SIMULATED_REVIEWERS]
    for target, rows in demo_corpus().items():
        corpus_rows_import(project=reviewed, direction_code=f"en-{target}", rows=rows, source_name=CORPUS.name)
        assignments_set(project=reviewed, direction_code=f"en-{target}", usernames=SIMULATED_REVIEWERS)
    inject_rule_candidates(reviewed, log)
    candidates = Candidate.objects.filter(segment__project=reviewed).select_related("segment").order_by("pk")
    for reviewer in reviewers:
        for candidate in candidates:
            decision, reason = simulated_decision(reviewer.username, candidate)
            # one key per reviewer and candidate: a second set-up replays it and changes nothing
            decision_submit(
                user=reviewer,
                candidate_id=candidate.pk,
                decision=decision,
                reason=reason,
                idempotency_key=f"demo-{reviewer.username}-{candidate.pk}",
            )
    log(f"  {REVIEWED_PROJECT}: {candidates.count()} candidates decided by {', '.join(SIMULATED_REVIEWERS)}")
    build_release_score(reviewed, log, score)


# Demo steps of later stages: (name, function(project, log, shared data directory, score)); each is idempotent.
DEMO_STEPS: list[tuple[str, Callable]] = [
    ("rule-based MQM candidates for the demo corpus", inject_rule_candidates),
    ("the reviewed demo: simulated review, build, release, scores", review_simulated),
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


def setup_demo(log: Callable[[str], None] = print, shared: Path = SHARED_XQMEVAL, score: bool = True) -> None:
    """The demo's accounts, project and candidates; the XQ-MEval release where ``shared`` holds it, scored
    unless ``score`` is off."""
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
        step(project, log, shared, score)
    log("demo accounts (demo only):")
    for name, password, role, langs in ACCOUNTS:
        log(f"  {name:6s} / {password:16s} {role}{' for ' + ', '.join(langs) if langs else ''}")
