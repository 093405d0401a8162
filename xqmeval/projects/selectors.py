"""The project page: one summary per pipeline stage, built from each app's own selectors and services.

Nothing here computes an expensive figure: agreement comes from the cached report only (the refresh task
computes it), and the meta-evaluation headline is loaded by its own request after the page (and cached).
A stage that cannot start yet says why, naming what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count

from annotation.agreement import refresh
from annotation.agreement import selectors as agreement
from annotation.agreement import tasks as agreement_tasks
from annotation.agreement.domain.report import scope_label
from annotation.review import selectors as review_selectors
from core import access
from core.models import CorpusImport, Project
from core.selectors import active_directions
from exports.benchmark import selectors as benchmark_selectors
from exports.metaeval import selectors as metaeval
from exports.metaeval import tasks as metaeval_tasks
from exports.models import PseudoTranslation, Release, ScoringJob
from exports.scores import selectors as scores_selectors
from exports.scores import services as scores_services
from exports.scores import tasks as scores_tasks
from injection import selectors as injection_selectors
from injection.models import InjectionRun
from scoring.api import all_metrics
from xqmeval import selectors as site_selectors
from xqmeval.celery import app
from xqmeval.projects.domain import states_agree

# the pipeline, in order: (key, title)
STAGES = (
    ("corpus", "Corpus"),
    ("injection", "Error injection"),
    ("review", "Review"),
    ("agreement", "Agreement"),
    ("benchmark", "Benchmark"),
    ("releases", "Releases"),
    ("scores", "Scores"),
    ("metaeval", "Meta-evaluation"),
)
STAGE_KEYS = tuple(key for key, _ in STAGES)

# state → what the badge says
STATE_LABELS = {
    "done": "done",
    "ready": "ready to start",
    "running": "running",
    "partial": "in progress",
    "blocked": "waiting",
    "todo": "to do",
}


@dataclass
class Stage:
    key: str
    title: str
    number: int
    state: str = "todo"
    blockers: list[str] = field(default_factory=list)  # why it cannot start yet
    data: dict = field(default_factory=dict)
    live: bool = False  # something runs: the stage polls for its own update

    @property
    def state_label(self) -> str:
        return STATE_LABELS[self.state]


def scoring_worker_configured() -> bool:
    """Whether scoring tasks can reach a worker queue (a broker is configured); the same test as
    ``exports.scores.tasks.start_scoring``."""
    return bool(getattr(settings, "CELERY_BROKER_URL", "") or app.conf.broker_url)


SCORING_WORKER_COMMAND = (
    "CELERY_BROKER_URL=redis://127.0.0.1:6379/0 CELERY_RESULT_BACKEND=redis://127.0.0.1:6379/0 "
    ".venv-scoring/bin/celery -A scoring.worker worker -Q scoring -c 1"
)


def _directions(project: Project, visible: set[str] | None) -> list:
    """The active directions (a retired one has no work left) this user may see."""
    return [d for d in active_directions(project) if visible is None or d.code in visible]


def _without(project: Project, visible: set[str] | None, counts: dict[str, int] | None) -> list[str]:
    """The active directions with no candidates (``counts``: candidates per direction code)."""
    if counts is None:
        return []
    return [d.code for d in _directions(project, visible) if not counts.get(d.code)]


def corpus_stage(project: Project, visible: set[str] | None, counts: dict[int, int]) -> Stage:
    """``counts``: gold segments per direction id (``segment_counts``), read once per view."""
    stage = Stage("corpus", "Corpus", 1)
    rows = [{"direction": d.code, "segments": counts.get(d.pk, 0)} for d in _directions(project, visible)]
    stage.data = {"rows": rows, "total": sum(r["segments"] for r in rows)}
    empty = [r["direction"] for r in rows if not r["segments"]]
    stage.state = "done" if rows and not empty else ("partial" if stage.data["total"] else "todo")
    if empty:
        stage.data["empty"] = empty
    importing = [
        {"id": job.pk, "dataset": job.dataset, "direction": job.direction.code, "status": job.status}
        for job in CorpusImport.objects.filter(
            project=project, status__in=CorpusImport.LIVE, direction__code__in=[r["direction"] for r in rows]
        ).select_related("direction")
        if not job.interrupted  # a dead one is shown on the corpus page, where it can be retried
    ]
    if importing:  # a Hub import is queued or reading: the stage polls until it is written
        stage.state, stage.live, stage.data["importing"] = "running", True, importing
    return stage


def injection_stage(
    project: Project,
    visible: set[str] | None,
    segments: int,
    n_candidates: int,
    per_direction: dict[str, int] | None = None,
) -> Stage:
    """Done only when every active direction has candidates (``per_direction``: candidates per code)."""

    stage = Stage("injection", "Error injection", 2)
    runs = list(InjectionRun.objects.filter(project=project).order_by("-created_at", "-id")[:5])
    totals = InjectionRun.objects.filter(project=project).aggregate(n=Count("id"))
    cost = sum((r.cost_usd for r in InjectionRun.objects.filter(project=project).only("cost_usd")), start=0)
    stage.data = {
        "runs": [{"run": r, "progress": injection_selectors.run_progress(r)} for r in runs],
        "run_count": totals["n"],
        "candidates": n_candidates,
        "cost": cost,
    }
    stage.live = any(r.status in (InjectionRun.Status.PENDING, InjectionRun.Status.RUNNING) for r in runs)
    if not segments:
        stage.state = "blocked"
        stage.blockers.append("no gold segments yet: import a corpus first")
    elif stage.live:
        stage.state = "running"
    elif n_candidates and (without := _without(project, visible, per_direction)):
        stage.state = "partial"
        stage.blockers += [f"no candidates in {code} yet" for code in without]
    elif n_candidates:
        stage.state = "done"
    else:
        stage.state = "ready"
    return stage


def review_stage(
    project: Project, visible: set[str] | None, candidates: int, per_direction: dict[str, int] | None = None
) -> Stage:
    """Done only when every active direction has candidates and none is pending."""

    stage = Stage("review", "Review", 3)
    languages = review_selectors.language_progress(project)
    if visible is not None:
        visible_targets = {code.split("-", 1)[1] for code in visible}
        languages = [row for row in languages if row["language"] in visible_targets]
    for row in languages:
        decided = row["accepted"] + row["rejected"] + row["excluded"]
        row["percent"] = round(100 * decided / row["total"]) if row["total"] else 0
    stage.data = {
        "languages": languages,
        "rounds": review_selectors.round_summaries(project) if visible is None else [],  # admins: every language
        # kept by the agreement refresh above a size (as the review admin page shows it), else counted now
        "adjudication_queue": review_selectors.decision_figures(project).disagreements if visible is None else None,
        "reviewers_per_candidate": project.reviewers_per_candidate,
    }
    pending = sum(row["pending"] for row in languages)
    if not candidates:
        stage.state = "blocked"
        stage.blockers.append("no candidates yet: start an injection run first")
    elif pending:
        stage.state = "partial"
    elif without := _without(project, visible, per_direction):
        stage.state = "partial"
        stage.blockers += [f"nothing to review in {code} yet" for code in without]
    else:
        stage.state = "done"
    return stage


def agreement_stage(project: Project, user) -> Stage:
    """Headline κ/α (accept/reject, all languages) and rwg from the cached report only; never computed here."""

    stage = Stage("agreement", "Agreement", 4)
    scope = agreement.scope_for(user, project)
    if scope is None:
        stage.state = "blocked"
        stage.blockers.append("none of the project's languages is assigned to you")
        return stage
    shown = agreement.cached_report(project, scope)
    queued = agreement_tasks.refresh_agreement_queued()
    if not shown.fresh and queued:
        agreement_tasks.page_missed(project.pk)  # queues the refresh task; with a broker nothing is computed here
    report = shown.report
    stage.data = {
        "fresh": shown.fresh,
        "computed_at": shown.computed_at,
        "refresh": refresh.status(project.pk),
        "queued": queued,
    }
    if report is None:
        stage.state = "todo"
        stage.data["missing"] = True
        return stage
    rows = [
        {
            "language": row.get("language"),
            "doubly_reviewed": row.get("units_with_2_or_more") or 0,
            "percent_agreement": row.get("percent_agreement"),
            "fleiss_kappa": row.get("fleiss_kappa"),
            "krippendorff_alpha": row.get("krippendorff_alpha"),
        }
        for row in report.get("languages", [])
    ]
    rwg = [
        {"scope": scope_label(row["task"], row["language"]), "value": row["mean_rwg_j_composite"]}
        for row in report.get("likert_composite", [])
        if row.get("mean_rwg_j_composite") is not None
    ]
    stage.data.update({"rows": rows, "rwg": rwg, "doubly_reviewed": sum(r["doubly_reviewed"] for r in rows)})
    stage.state = "done" if stage.data["doubly_reviewed"] else "partial"
    if not stage.data["doubly_reviewed"]:
        stage.blockers.append("no candidate has two reviewers' decisions yet")
    return stage


def benchmark_stage(project: Project, visible: set[str] | None) -> Stage:

    stage = Stage("benchmark", "Benchmark", 5)
    page = benchmark_selectors.benchmark_summary(project, visible)
    accepted = review_selectors.pool_counts(project)  # the review counters, not a count of the pool
    directions = [d.code for d in _directions(project, visible)]
    build = page["build"]
    stage.data = {
        "table": page["table"],
        "levels": page["levels"],
        "build": build,
        "accepted": [{"direction": code, "accepted": accepted.get(code, 0)} for code in directions],
        "excluded": benchmark_selectors.excluded_count(project, visible),
        "total": sum(row["total"] for row in page["table"]),
    }
    stage.live = bool(build and build.status in ("pending", "running") and not build.interrupted)  # died: not running
    without = [code for code in directions if not accepted.get(code)]
    for code in without:
        stage.blockers.append(f"no accepted candidates in {code} yet")
    if stage.live:
        stage.state = "running"
    elif not accepted:
        stage.state = "blocked"
    elif stage.data["total"] and (build is None or build.status == "done") and not without:  # built, every direction
        stage.state = "done"
    elif stage.data["total"] and (build is None or build.status == "done"):
        stage.state = "partial"  # built, but a direction has nothing in it
    else:
        stage.state = "ready"
    return stage


def releases_stage(project: Project, pseudo_translations: int) -> Stage:

    stage = Stage("releases", "Releases", 6)
    releases = list(benchmark_selectors.releases_of(project))
    stage.data = {"releases": releases}
    stage.live = any(
        (r.status == "building" and not r.interrupted) or r.push_status == "pushing" for r in releases
    )  # died: not live
    if stage.live:
        stage.state = "running"
    elif not pseudo_translations:
        stage.state = "blocked"
        stage.blockers.append("no pseudo translations yet: build the benchmark first")
    elif any(r.status == "ready" for r in releases):
        stage.state = "done"
    else:
        stage.state = "ready"
    return stage


def scores_stage(project: Project, *, admin: bool, visible: set[str] | None = None, poll: bool = True) -> Stage:

    stage = Stage("scores", "Scores", 7)
    releases = list(Release.objects.filter(project=project, status=Release.Status.READY).order_by("-created_at", "-id"))
    worker = scoring_worker_configured()
    per_release = []
    for release in releases[:3]:
        unfinished = ScoringJob.objects.filter(release=release, status__in=("pending", "running")).exists()
        if admin and poll and worker and unfinished:
            # live progress from the result backend, read-only (finished files are ingested by collect_scores)
            states = scores_selectors.job_states(release=release, app=app)
            if scores_tasks.request_collect(release=release, states=states) and app.conf.task_always_eager:
                states = scores_selectors.job_states(release=release, app=app)  # collected in-process just now
            jobs = [{"job": s.job, "percent": s.percent, "status": s.status} for s in states]
        elif admin:
            jobs = [
                {"job": j, "percent": 100 if j.status == "done" else 0}
                for j in ScoringJob.objects.filter(release=release)
                .select_related("direction")
                .order_by("metric", "direction__code")
            ]
        else:
            jobs = []  # jobs are admin work, as on the scores page
        metrics = [
            {"metric": row["metric"], "n": row["n"]} for row in scores_selectors.scored_metrics([release], visible)
        ]
        per_release.append({"release": release, "jobs": jobs, "metrics": metrics})
    offered = sorted(all_metrics(), key=lambda m: (m.device != "cpu", m.name.lower())) if admin else []
    if not worker:  # this process scores what the web environment can (exports.scores.services)
        offered = [m for m in offered if m.family in scores_services.IN_PROCESS_FAMILIES]
    stage.data = {
        "releases": per_release,
        "worker": worker,
        "worker_command": SCORING_WORKER_COMMAND,
        "metrics": offered,
    }
    stage.live = any(j["job"].status in ("pending", "running") for r in per_release for j in r["jobs"])
    if not releases:
        stage.state = "blocked"
        stage.blockers.append("no ready release yet: make a release first")
    elif stage.live:
        stage.state = "running"
    elif any(r["metrics"] for r in per_release):
        stage.state = "done"
    else:
        stage.state = "ready"
    if not worker:
        stage.data["worker_missing"] = True
    return stage


def metaeval_stage(project: Project) -> Stage:
    """What the stage needs to load its headline: the newest scored release and its metrics."""
    stage = Stage("metaeval", "Meta-evaluation", 8)
    scored = scores_selectors.scored_metrics(Release.objects.filter(project=project))
    if not scored:
        stage.state = "blocked"
        stage.blockers.append("no metric scores yet: score a release first")
        return stage
    release_id = scored[0]["release_id"]
    stage.data = {
        "release_id": release_id,
        "version": scored[0]["release__version"],
        "metrics": [row for row in scored if row["release_id"] == release_id],
    }
    stage.state = "done"
    return stage


def tasks_queued() -> bool:
    """Whether the platform's tasks go to a worker (a broker is configured) rather than run in-process."""

    return not app.conf.task_always_eager


def metaeval_headlines(release, metrics: list[str], *, queued: bool) -> tuple[list[dict], bool]:
    """The headline of each metric from the cache. A miss is queued for a worker when one runs (the
    fragment then polls), else computed here, as the agreement dashboard does without a worker.
    Returns (headlines, still computing)."""
    out, computing = [], False
    for metric in metrics:
        headline = metaeval.cached_headline(release, metric)
        if headline is None and queued:
            metaeval_tasks.request_headline(release, metric)
            headline = {"metric": metric, "computing": True}
            computing = True
        elif headline is None:
            headline = metaeval.compute_headline(release, metric)
        out.append(headline)
    return out, computing


def stage_for(key: str, project: Project, user) -> Stage:
    """One stage on its own (the live fragment a running stage polls)."""
    return {s.key: s for s in pipeline(project, user, only=key)}[key]


def pipeline(project: Project, user, only: str | None = None) -> list[Stage]:
    """Every stage of ``project`` as ``user`` may see it (annotators: their directions only)."""
    admin = access.is_admin(user)
    visible = benchmark_selectors.visible_directions(user, project)

    def want(key: str) -> bool:
        return only in (None, key)

    stages: list[Stage] = []
    candidates, per_code = 0, {}
    if want("injection") or want("review"):  # from the review counters: a few rows, not a count of the candidates
        ids = None if visible is None else set(project.directions.filter(code__in=visible).values_list("pk", flat=True))
        statuses = review_selectors.candidate_statuses(project)
        candidates = sum(sum(by_status.values()) for d, by_status in statuses.items() if ids is None or d in ids)
        code_of = {d.pk: d.code for d in project.directions.all()}
        per_code = {code_of.get(d): sum(by_status.values()) for d, by_status in statuses.items()}
    per_direction = benchmark_selectors.segment_counts(project) if want("corpus") or want("injection") else {}
    if want("corpus"):
        stages.append(corpus_stage(project, visible, per_direction))
    if want("injection"):
        codes = {d.pk: d.code for d in project.directions.all()}
        segments = sum(n for pk, n in per_direction.items() if visible is None or codes.get(pk) in visible)
        stages.append(injection_stage(project, visible, segments, candidates, per_code))
    if want("review"):
        stages.append(review_stage(project, visible, candidates, per_code))
    if want("agreement"):
        stages.append(agreement_stage(project, user))
    if want("benchmark"):
        stages.append(benchmark_stage(project, visible))
    if want("releases"):
        stages.append(releases_stage(project, PseudoTranslation.objects.filter(segment__project=project).exists()))
    if want("scores"):
        stages.append(scores_stage(project, admin=admin, visible=visible))
    if want("metaeval"):
        stages.append(metaeval_stage(project))
    if only is None:  # the whole page: no stage waits while a later one is under way
        for stage, state in zip(stages, states_agree([s.state for s in stages])):
            stage.state = state
    return stages


# the stages every direction goes through: while one of them is unfinished for any direction, the work is there
DIRECTION_STAGES = ("corpus", "injection", "review", "benchmark")


def next_step(stages: list[Stage]) -> Stage | None:
    """What the page points at: the first unfinished stage every direction goes through; after those, the
    first stage not done after the last one done. A stage left behind by later ones (agreement on imported
    decisions, which have no second reviewer) is not where the work is."""
    unfinished = next((s for s in stages if s.key in DIRECTION_STAGES and s.state != "done"), None)
    if unfinished is not None:
        return unfinished
    last_done = max((i for i, s in enumerate(stages) if s.state == "done"), default=-1)
    return next((s for s in stages[last_done + 1 :] if s.state != "done"), None)


def project_list(user) -> list[dict]:
    """The Projects list (home): per project, its directions' counts (core.selectors) and where it stands."""
    return site_selectors.project_overview(user)
