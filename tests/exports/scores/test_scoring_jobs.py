"""The platform side of scoring: ingestion of worker files, scores by direction and level in the UI,
permissions, and the gpu-queue path end to end with a real scoring worker (.venv-scoring, Redis)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from celery import current_app
from django.urls import reverse

from exports.models import MetricScore, Release, ScoringJob
from exports.scores import domain as scores_domain
from exports.scores import selectors, services, tasks
from exports.scores.domain import ScoringError
from scoring.runner import META_KEY, part_path
from scoring.tests.releases import release_rows, write_release
from tests.conftest import REPO, need
from tests.support.asserts import every
from tests.support.celery_worker import celery_worker

SCORING_PYTHON = REPO / ".venv-scoring" / "bin" / "python"


@pytest.fixture
def release(project, tmp_path):
    root = write_release(tmp_path / "rel")
    return Release.objects.create(project=project, version="t1", status=Release.Status.READY, path=str(root))


def write_part(release: Release, metric: str, direction_code: str, scores=None, overrides: dict | None = None) -> Path:
    """A part file as a worker writes it (scoring.runner's layout and metadata)."""
    rows = release_rows(direction_code)
    cols = {
        "direction": [direction_code] * len(rows),
        "triplet_id": [r["triplet_id"] for r in rows],
        "num_errors": [r["num_errors"] for r in rows],
        "score": scores if scores is not None else [100.0 - 10 * r["num_errors"] for r in rows],
    }
    cols.update(overrides or {})
    meta = {"metric": metric, "signature": {"library": "sacrebleu", "library_version": "2.6.0", "tokenizer": "13a"}}
    path = part_path(Path(release.path) / "scores", metric, direction_code)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table(cols).replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    pq.write_table(table, path)
    return path


def test_ingest_and_score_table_by_direction_and_level(release, languages):
    n = len(release_rows("en-de"))
    for d in ("en-de", "en-zh"):
        write_part(release, "chrF++", d)
        job = ScoringJob.objects.create(release=release, metric="chrF++", direction=languages[d])
        assert services.job_ingest(job=job) == n
        job.refresh_from_db()
        assert job.status == ScoringJob.Status.DONE and job.output_path.endswith(f"{d}.parquet")
    assert MetricScore.objects.filter(release=release, metric="chrF++").count() == 2 * n
    one = MetricScore.objects.get(release=release, metric="chrF++", triplet_id="en-de:0:3:0")
    assert one.level == 3 and one.score == 70.0 and one.signature["tokenizer"] == "13a"
    # ingesting again replaces, never duplicates
    services.job_ingest(job=ScoringJob.objects.get(release=release, metric="chrF++", direction=languages["en-de"]))
    assert MetricScore.objects.filter(release=release, metric="chrF++").count() == 2 * n
    [table] = selectors.score_table(release)
    assert table["metric"] == "chrF++" and table["better"] == "higher" and table["levels"] == [0, 1, 2, 3, 4, 5]
    de = next(r for r in table["rows"] if r["direction"] == "en-de")
    assert de["levels"] == [100.0, 90.0, 80.0, 70.0, 60.0, 50.0] and de["n"] == n
    assert de["all"] == pytest.approx(sum(100.0 - 10 * r["num_errors"] for r in release_rows("en-de")) / n)
    assert table["rows"][-1]["direction"] == "mean of directions" and table["rows"][-1]["levels"][5] == 50.0
    assert selectors.score_table(release, ["en-de"])[0]["rows"] == [de]  # one direction: no mean row


def test_unreadable_worker_file_is_a_clear_error(release, languages):
    path = part_path(Path(release.path) / "scores", "chrF++", "en-de")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not parquet")
    with pytest.raises(ScoringError, match="not a readable parquet file"):
        services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"score": [float("nan")] * 48}, "not a finite number"),
        ({"triplet_id": ["same"] * 48}, "appears twice"),
        ({"direction": ["en-zh"] * 48}, "expected 'en-de'"),
        ({"triplet_id": [None] * 48}, r"row 1: triplet_id None is not a non-empty string"),
        (
            {"triplet_id": [f"{i}" + "x" * 200 for i in range(48)]},
            r"row 1: triplet_id '0xxx.*is 201 characters long, at most 200 fit",
        ),
        ({"score": ["0.5"] * 48}, r"row 1 \(triplet 'en-de:.*'\): score '0.5' is not a finite number"),
        ({"score": [True] * 48}, r"row 1 \(triplet 'en-de:.*'\): score True is not a finite number"),
        (
            {"num_errors": [float("nan")] * 48},
            r"row 1 \(triplet 'en-de:.*'\): num_errors nan is not a whole number from 0 to 32767",
        ),
        ({"num_errors": [-1] * 48}, r"row 1 \(triplet 'en-de:.*'\): num_errors -1 is not a whole number"),
        ({"num_errors": [1.5] * 48}, r"row 1 \(triplet 'en-de:.*'\): num_errors 1.5 is not a whole number"),
    ],
)
def test_bad_worker_file_is_refused_and_nothing_written(release, languages, overrides, error):
    assert len(release_rows("en-de")) == 48
    write_part(release, "chrF++", "en-de", overrides=overrides)
    with pytest.raises(ScoringError, match=error):
        services.part_ingest(
            release=release,
            metric="chrF++",
            direction=languages["en-de"],
            path=part_path(Path(release.path) / "scores", "chrF++", "en-de"),
        )
    assert not MetricScore.objects.exists()


def test_ingest_streams_in_batches_and_a_late_bad_row_keeps_the_previous_scores(release, languages, monkeypatch):
    monkeypatch.setattr(scores_domain, "INGEST_BATCH", 10)
    path = write_part(release, "chrF++", "en-de")
    assert services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path) == 48
    before = sorted(MetricScore.objects.filter(release=release).values_list("triplet_id", "score"))
    assert len(before) == 48
    scores = [50.0] * 47 + [float("inf")]  # the bad row is in the last batch
    write_part(release, "chrF++", "en-de", scores=scores)
    with pytest.raises(ScoringError, match="row 48 .*not a finite number"):
        services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)
    assert sorted(MetricScore.objects.filter(release=release).values_list("triplet_id", "score")) == before


def summaries_of(release) -> dict:
    from exports.models import ScoreSummary

    return {
        (m, d, lvl): (n, pytest.approx(t))
        for m, d, lvl, n, t in ScoreSummary.objects.filter(release=release).values_list(
            "metric", "direction__code", "level", "n", "total"
        )
    }


def grouped_scores(release) -> dict:
    from django.db.models import Count, Sum

    return {
        (r["metric"], r["direction__code"], r["level"]): (r["n"], r["total"])
        for r in MetricScore.objects.filter(release=release)
        .values("metric", "direction__code", "level")
        .annotate(n=Count("id"), total=Sum("score"))
        .order_by()
    }


def test_score_summaries_follow_every_ingest(release, languages):
    """The pages' per-level figures (ScoreSummary) equal a grouped pass over the scores after an ingest, a
    re-ingest with other scores, a failed ingest (both left as they were) and another metric's ingest."""
    path = write_part(release, "chrF++", "en-de")
    services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)
    assert summaries_of(release) == grouped_scores(release) and len(summaries_of(release)) == 6
    write_part(release, "chrF++", "en-de", scores=[float(i) for i in range(48)])
    services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)
    assert summaries_of(release) == grouped_scores(release)
    before = summaries_of(release)
    write_part(release, "chrF++", "en-de", scores=[1.0] * 47 + [float("nan")])
    with pytest.raises(ScoringError):
        services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)
    assert summaries_of(release) == before == grouped_scores(release)
    services.part_ingest(
        release=release, metric="TER", direction=languages["en-zh"], path=write_part(release, "TER", "en-zh")
    )
    assert summaries_of(release) == grouped_scores(release) and {k[0] for k in summaries_of(release)} == {
        "chrF++",
        "TER",
    }


def test_score_pages_read_the_summaries_not_the_scores(client, admin_user, release, languages):
    import re

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for d in ("en-de", "en-zh"):
        services.part_ingest(
            release=release, metric="chrF++", direction=languages[d], path=write_part(release, "chrF++", d)
        )
    client.force_login(admin_user)
    for url in (f"/scores/{release.pk}/", f"/projects/{release.project.name}/"):
        client.get(url)
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url).status_code == 200
        assert not [q["sql"] for q in queries.captured_queries if re.search(r'FROM "exports_metricscore"', q["sql"])], (
            url
        )


@pytest.mark.parametrize("metadata", [b"{not json", b'["chrF++"]'])
def test_a_worker_file_with_unreadable_metadata_is_refused(release, languages, metadata):
    path = write_part(release, "chrF++", "en-de")
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({META_KEY: metadata}), path)
    with pytest.raises(ScoringError, match=f"{path}: metadata {META_KEY!r} is not a JSON object"):
        services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)
    assert not MetricScore.objects.exists()


def test_ingest_refuses_a_file_of_another_metric(release, languages):
    path = write_part(release, "TER", "en-de")
    with pytest.raises(ScoringError, match="holds metric 'TER'"):
        services.part_ingest(release=release, metric="chrF++", direction=languages["en-de"], path=path)


@pytest.fixture
def no_broker(settings):
    from xqmeval.celery import app

    settings.CELERY_BROKER_URL = ""
    saved = {k: app.conf.get(k) for k in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=None, task_always_eager=True)
    try:
        yield app
    finally:
        app.conf.update(saved)


def test_without_broker_a_neural_metric_says_it_needs_a_worker(release, no_broker):
    with pytest.raises(ScoringError, match="COMET-22: .*CELERY_BROKER_URL"):
        tasks.start_scoring(release=release, metrics=["chrF++", "COMET-22"])
    assert not ScoringJob.objects.exists()


def test_without_broker_string_metrics_are_scored_in_process_as_sacrebleu_scores_them(
    release, languages, no_broker, django_capture_on_commit_callbacks
):
    """#46.1: no broker, no scoring worker: the web process scores chrF++, BLEU and TER itself and ingests them;
    each score is sacrebleu's own sentence_score of the release's row (the library as the reference)."""
    from sacrebleu.metrics import BLEU, CHRF, TER

    with django_capture_on_commit_callbacks(execute=True):
        jobs = tasks.start_scoring(release=release, metrics=["chrF++", "BLEU", "TER"])
    assert len(jobs) == 6
    assert set(ScoringJob.objects.values_list("status", flat=True)) == {"done"}, list(
        ScoringJob.objects.values_list("metric", "error")
    )
    reference = {
        "chrF++": lambda lang: CHRF(word_order=2),
        "BLEU": lambda lang: BLEU(tokenize="zh" if lang == "zh" else "13a", effective_order=True),
        "TER": lambda lang: TER(asian_support=lang == "zh"),
    }
    for code in ("en-de", "en-zh"):
        rows = {r["triplet_id"]: r for r in release_rows(code)}
        for metric, make in reference.items():
            stored = MetricScore.objects.filter(release=release, metric=metric, direction__code=code)
            assert stored.count() == len(rows)
            scorer = make(code.split("-")[1])
            for s in stored:
                row = rows[s.triplet_id]
                assert s.score == pytest.approx(scorer.sentence_score(row["mt"], [row["ref"]]).score)
                assert s.level == row["num_errors"]
    # asked again: nothing is scored twice, the page reads the finished jobs without a result backend
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        tasks.start_scoring(release=release, metrics=["chrF++"])
    assert callbacks == []
    assert {s.status for s in selectors.job_states(release=release, app=no_broker)} == {"done"}


@pytest.mark.django_db(transaction=True)
def test_without_broker_the_score_command_scores_a_judge_metric_in_process_against_an_endpoint(
    release, languages, no_broker, monkeypatch
):
    """#46.1: an LLM judge against the endpoint the operator names, with no broker and no judge worker: the web
    process calls the endpoint (a deterministic judge server on 127.0.0.1) and ingests the scores."""
    from io import StringIO

    from django.core.management import call_command

    from scoring.judges.stub import JudgeStubServer

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with JudgeStubServer() as stub:
        out = StringIO()
        call_command(
            "score",
            "demo@t1",
            "--metrics",
            "gemba-mqm",
            "--directions",
            "en-de",
            "--limit",
            "12",
            "--judge-url",
            stub.base_url,
            "--judge-model",
            "stub-judge",
            "--timeout",
            "120",
            stdout=out,
            stderr=StringIO(),
        )
        answered = len(stub.served)
    job = ScoringJob.objects.get(release=release, metric="gemba-mqm")
    assert job.status == "done", (job.error, out.getvalue())
    assert MetricScore.objects.filter(release=release, metric="gemba-mqm").count() == 12 and answered >= 12
    signature = MetricScore.objects.filter(release=release, metric="gemba-mqm").first().signature
    assert signature["judge"]["model"] == "stub-judge"


def test_scores_page_by_direction_and_level_and_permissions(
    client, release, languages, admin_user, annotator_de, annotator_zh
):
    for d in ("en-de", "en-zh"):
        write_part(
            release, "chrF++", d, scores=[(7.0 if d == "en-de" else 3.0) + r["num_errors"] for r in release_rows(d)]
        )
        services.job_ingest(job=ScoringJob.objects.create(release=release, metric="chrF++", direction=languages[d]))
    url = reverse("scores:release", args=[release.pk])
    client.force_login(admin_user)
    page = client.get(url).content.decode()
    assert "en-de" in page and "en-zh" in page and "k = 5" in page and "higher is better" in page
    assert "12.00" in page and "8.00" in page  # level-5 means of en-de and en-zh
    assert "Scoring jobs" in page and "done" in page
    client.force_login(annotator_de)
    page = client.get(url).content.decode()
    assert "en-de" in page and "en-zh" not in page and "Scoring jobs" not in page
    assert client.post(reverse("scores:start", args=[release.pk]), {"metric": "chrF++"}).status_code == 403
    assert client.get(reverse("scores:progress", args=[release.pk])).status_code == 403
    client.logout()
    assert client.get(url).status_code == 302  # to login


def test_untrusted_text_in_job_errors_is_escaped(client, release, languages, admin_user):
    ScoringJob.objects.create(
        release=release,
        metric="chrF++",
        direction=languages["en-de"],
        status="failed",
        error="<script>alert(1)</script>",
    )
    client.force_login(admin_user)
    page = client.get(reverse("scores:release", args=[release.pk])).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


@pytest.mark.redis
@pytest.mark.django_db
def test_scores_page_only_reads_and_collect_scores_ingests(client, broker, release, languages, admin_user):
    """A job whose task has finished shows as such, but viewing the page or its progress writes nothing (they
    queue collect_scores for a platform worker, once); the collect_scores task ingests the file."""
    import redis as redis_lib

    from xqmeval.celery import app

    drop_collect_callbacks(broker)
    n = len(release_rows("en-de"))
    write_part(release, "chrF++", "en-de")
    job = ScoringJob.objects.create(release=release, metric="chrF++", direction=languages["en-de"])
    task_id = selectors.task_id_for(job)
    app.backend.store_result(task_id, {"metric": "chrF++", "direction": "en-de"}, "SUCCESS")
    try:
        client.force_login(admin_user)
        assert client.get(reverse("scores:release", args=[release.pk])).status_code == 200
        progress = client.get(reverse("scores:progress", args=[release.pk])).json()
        assert progress["jobs"] == [
            {
                "metric": "chrF++",
                "direction": "en-de",
                "status": "running",
                "percent": 0,
                "error": "",
                "judge_requests": None,
                "cost_usd": None,
            }
        ]
        job.refresh_from_db()
        assert job.status == ScoringJob.Status.PENDING and not MetricScore.objects.filter(release=release).exists()
        # the views asked a platform worker to collect, once (debounced), instead of ingesting themselves
        queued = [
            raw
            for raw in redis_lib.Redis.from_url(broker).lrange("default", 0, -1)
            if b"exports.scoring_jobs.collect_scores" in raw
        ]
        assert len(queued) == 1
        drop_collect_callbacks(broker)
        assert tasks.collect_scores.apply(args=[release.pk, job.pk]).get() == {"done": 1}
        job.refresh_from_db()
        assert job.status == ScoringJob.Status.DONE and MetricScore.objects.filter(release=release).count() == n
    finally:
        app.backend.forget(task_id)


# ---- end to end: platform -> Redis -> real scoring worker (.venv-scoring) -> files -> MetricScore -------


@pytest.fixture
def broker(redis_url):
    from xqmeval.celery import app

    def forget_connections() -> None:
        # The app caches its result backend, connection pool and producer pool from the configuration it
        # first saw: after an eager task elsewhere in the run, sends would go to the default amqp broker.
        app._pool = None
        app.amqp._producer_pool = None
        app._backend_cache = None
        app._local.__dict__.pop("backend", None)

    saved = {k: app.conf.get(k) for k in ("broker_url", "result_backend", "task_always_eager")}
    forget_connections()
    app.conf.update(broker_url=redis_url, result_backend=redis_url, task_always_eager=False)
    try:
        yield redis_url
    finally:
        forget_connections()
        app.conf.update(saved)


@pytest.fixture
def cpu_worker(broker, tmp_path):
    """A scoring worker on CPU consuming only queue 'scoring', started from .venv-scoring like in production."""
    need(SCORING_PYTHON.exists(), f"the scoring virtualenv at {SCORING_PYTHON.parent.parent} (bin/setup-env scoring)")
    drop_collect_callbacks(broker)  # left by an earlier run that was stopped
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
        "PYTHONPATH": str(REPO),
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)  # the worker has no Django
    try:
        with celery_worker(
            env, tmp_path / "worker.log", app="scoring.worker", queues="scoring", name="cpu", python=SCORING_PYTHON
        ) as proc:
            yield proc
    finally:
        drop_collect_callbacks(broker)


def drop_collect_callbacks(broker: str) -> None:
    """Remove the collect_scores callbacks the scoring tasks queued (no platform worker runs in these tests)."""
    import redis as redis_lib

    r = redis_lib.Redis.from_url(broker)
    for raw in r.lrange("default", 0, -1):
        if b"exports.scoring_jobs.collect_scores" in raw:
            r.lrem("default", 1, raw)


def wait_for(release, metric_jobs: int, timeout: float = 120.0, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = services.jobs_sync(release=release, app=current_app)
        if len([s for s in states if s.job.status in ("done", "failed")]) >= metric_jobs:
            return states
        time.sleep(0.5)
    raise AssertionError(
        f"jobs not finished in {timeout}s: {[(s.job.metric, s.job.status, s.state) for s in states]}; "
        f"worker log: {log.read_text()[-3000:] if log else ''}"
    )


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_gpu_queue_path_end_to_end_with_cpu_worker(cpu_worker, broker, release, languages, tmp_path):
    import redis as redis_lib

    from scoring.queues import GPU_QUEUE

    n = len(release_rows("en-de"))
    jobs = tasks.start_scoring(release=release, metrics=["chrF++", "TER"])
    assert len(jobs) == 4
    states = wait_for(release, 4, log=tmp_path / "worker.log")
    assert every(s.job.status == "done" for s in states), [(s.job.metric, s.job.error) for s in states]
    assert MetricScore.objects.filter(release=release).count() == 4 * n
    # each scoring task queued its collect_scores callback for a platform worker (queue default)
    r = redis_lib.Redis.from_url(broker)
    callbacks = [raw for raw in r.lrange("default", 0, -1) if b"exports.scoring_jobs.collect_scores" in raw]
    assert len(callbacks) == 4
    drop_collect_callbacks(broker)
    # each ingested score is exactly the worker's file, levels come from the release
    for metric in ("chrF++", "TER"):
        table = pq.read_table(Path(release.path) / "scores" / f"{metric.lower().replace('+', 'p')}.parquet").to_pylist()
        assert len(table) == 2 * n
        db = {
            (s.direction.code, s.triplet_id): (s.score, s.level)
            for s in MetricScore.objects.filter(release=release, metric=metric).select_related("direction")
        }
        for row in table:
            assert db[(row["direction"], row["triplet_id"])] == (row["score"], row["num_errors"])
    chrf_by_level = {t["metric"]: t for t in selectors.score_table(release)}["chrF++"]["rows"][0]["levels"]
    assert chrf_by_level[0] == 100.0 and chrf_by_level[5] < chrf_by_level[1] < 100.0
    signature = MetricScore.objects.filter(release=release, metric="TER").first().signature
    assert signature["library"] == "sacrebleu" and "tok:" in signature["sacrebleu_signature"]

    # done jobs are not sent again
    again = tasks.start_scoring(release=release, metrics=["chrF++", "TER"])
    assert {j.pk for j in again} == {j.pk for j in jobs}
    assert every(s.job.status == "done" for s in services.jobs_sync(release=release, app=current_app))

    # a worker-side failure is recorded with its reason
    tasks.start_scoring(
        release=release,
        metrics=["spBLEU"],
        directions=["en-de"],
        options={"spm_model": str(tmp_path / "missing.model")},
    )
    failed = [s for s in wait_for(release, 5, log=tmp_path / "worker.log") if s.job.metric == "spBLEU"][0]
    assert (
        failed.job.status == "failed" and "missing.model" in failed.job.error and "does not exist" in failed.job.error
    )

    # a GPU metric goes to the gpu queue, which this CPU worker does not consume
    before = r.llen(GPU_QUEUE)
    [comet] = tasks.start_scoring(release=release, metrics=["COMET-22"], directions=["en-de"])
    assert r.llen(GPU_QUEUE) == before + 1
    time.sleep(2)
    comet.refresh_from_db()
    assert comet.status == "pending"
    # take our message back off the queue so no GPU worker scores a test release later
    for raw in r.lrange(GPU_QUEUE, 0, -1):
        if selectors.task_id_for(comet).encode() in raw:
            r.lrem(GPU_QUEUE, 1, raw)


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_score_command_queues_waits_and_ingests(cpu_worker, release, languages, tmp_path):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("score", "demo@t1", "--metrics", "chrF,BLEU", "--timeout", "120", stdout=out, stderr=StringIO())
    text = out.getvalue()
    assert "4 job(s) for demo@t1" in text and text.count(" done") == 4
    n = len(release_rows("en-de"))
    assert MetricScore.objects.filter(release=release, metric="BLEU").count() == 2 * n
    summary = json.loads((Path(release.path) / "scores" / "summary.json").read_text())
    assert summary["metrics"]["BLEU"]["directions"]["en-zh"]["signature"]["tokenizer"] == "zh"
    with pytest.raises(CommandError, match="1 job\\(s\\) failed"):
        call_command(
            "score",
            str(release.pk),
            "--metrics",
            "spBLEU",
            "--directions",
            "en-zh",
            "--spm-model",
            "/nonexistent.model",
            "--timeout",
            "120",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    with pytest.raises(CommandError, match="unknown metric 'nope'"):
        call_command("score", "demo@t1", "--metrics", "nope", stdout=StringIO())
    with pytest.raises(CommandError, match="not found"):
        call_command("score", "demo@v9", "--metrics", "chrF", stdout=StringIO())


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_score_command_passes_trust_remote_code_only_when_asked(broker, release, languages):
    """`manage.py score --trust-remote-code` (OmniScore's legacy checkpoints) reaches the worker's options;
    without the flag the task carries no such option."""
    import base64
    from io import StringIO

    import redis as redis_lib
    from django.core.management import call_command

    from scoring.queues import GPU_QUEUE

    r = redis_lib.Redis.from_url(broker)

    def sent_options(job) -> dict:
        for raw in r.lrange(GPU_QUEUE, 0, -1):
            message = json.loads(raw)
            if message["headers"]["id"] == selectors.task_id_for(job):
                r.lrem(GPU_QUEUE, 1, raw)  # no GPU worker should score a test release later
                _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
                return kwargs["options"]
        raise AssertionError("task not queued")

    call_command("score", "demo@t1", "--metrics", "OmniScore", "--directions", "en-de", "--no-wait", stdout=StringIO())
    job = ScoringJob.objects.get(release=release, metric="OmniScore")
    assert "trust_remote_code" not in sent_options(job)
    call_command(
        "score",
        "demo@t1",
        "--metrics",
        "OmniScore",
        "--directions",
        "en-de",
        "--no-wait",
        "--force",
        "--trust-remote-code",
        stdout=StringIO(),
    )
    assert sent_options(job)["trust_remote_code"] is True


def test_ingest_skips_segments_a_judge_could_not_score_and_refuses_unexplained_gaps(release, languages):
    n = len(release_rows("en-de"))
    scores = [-1.0] * n
    scores[3] = None
    errors = [""] * n
    errors[3] = "APIStatusError (HTTP 500): server error"
    path = write_part(release, "gemba-mqm", "en-de", scores=scores, overrides={"error": errors, "note": [""] * n})
    assert services.part_ingest(release=release, metric="gemba-mqm", direction=languages["en-de"], path=path) == n - 1
    assert not MetricScore.objects.filter(
        release=release, metric="gemba-mqm", triplet_id=release_rows("en-de")[3]["triplet_id"]
    ).exists()
    errors[3] = ""
    path = write_part(release, "gemba-mqm", "en-de", scores=scores, overrides={"error": errors, "note": [""] * n})
    with pytest.raises(ScoringError, match="not a finite number"):
        services.part_ingest(release=release, metric="gemba-mqm", direction=languages["en-de"], path=path)


@pytest.fixture
def judge_worker(broker, tmp_path):
    """A scoring worker consuming only queue 'judge' (LLM judges), started from .venv-scoring."""
    need(SCORING_PYTHON.exists(), f"the scoring virtualenv at {SCORING_PYTHON.parent.parent} (bin/setup-env scoring)")
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
        "PYTHONPATH": str(REPO),
        "OPENAI_API_KEY": "test-key",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    with celery_worker(
        env, tmp_path / "judge-worker.log", app="scoring.worker", queues="judge", name="judge", python=SCORING_PYTHON
    ) as proc:
        yield proc


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_judge_metrics_through_the_judge_queue_and_the_score_command(judge_worker, release, languages, tmp_path):
    from io import StringIO

    from django.core.management import call_command

    from scoring.judges.stub import JudgeStubServer

    with JudgeStubServer() as stub:
        out = StringIO()
        call_command(
            "score",
            "demo@t1",
            "--metrics",
            "gemba-mqm,dcr",
            "--directions",
            "en-de",
            "--limit",
            "12",
            "--judge-url",
            stub.base_url,
            "--judge-model",
            "stub-judge",
            "--max-usd",
            "1",
            "--timeout",
            "180",
            stdout=out,
            stderr=StringIO(),
        )
        assert out.getvalue().count(" done") == 2, out.getvalue() + (tmp_path / "judge-worker.log").read_text()[-3000:]
        sent = len(stub.served)
    for metric in ("gemba-mqm", "dcr"):
        assert MetricScore.objects.filter(release=release, metric=metric).count() == 12
    signature = MetricScore.objects.filter(release=release, metric="dcr").first().signature
    assert signature["judge"]["model"] == "stub-judge" and signature["variant"] == "mt"
    summary = json.loads((Path(release.path) / "scores" / "summary.json").read_text())
    assert summary["metrics"]["gemba-mqm"]["directions"]["en-de"]["judge"]["sent"] == 12
    dcr = summary["metrics"]["dcr"]["directions"]["en-de"]["judge"]
    assert dcr["calls"] == 24 and 12 + dcr["sent"] == sent  # DCE + AMC per triplet; identical AMC requests sent once
    assert (Path(release.path) / "scores" / ".judge-cache" / "cache.db").is_file()


def test_scores_page_shows_judge_costs_askqe_decisions_and_cef_reliability(
    client, release, languages, admin_user, annotator_de, monkeypatch
):
    from scoring.judges.stub import JudgeStubServer
    from scoring.runner import ScoreOptions, score_release

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with JudgeStubServer() as stub:
        judge = {"model": "stub-judge", "base_url": stub.base_url, "concurrency": 8}
        score_release(
            release.path,
            ["askqe", "cef"],
            out=selectors.scores_dir(release),
            options=ScoreOptions(
                judge=judge,
                limit=12,
                extra={"judges": "stub-judge,stub-b", "bt_column": "mt_marked", "nli_model": "none"},
            ),
        )
    client.force_login(admin_user)
    page = client.get(reverse("scores:release", args=[release.pk])).content.decode()
    assert "LLM judges: calls and cost" in page and "stub-judge" in page
    assert "AskQE decisions" in page and "CEF judge reliability" in page and "stub-b" in page
    # judge scores go through the same ingestion, trend plot and meta-evaluation as any metric's
    for d in ("en-de", "en-zh"):
        assert (
            services.job_ingest(job=ScoringJob.objects.create(release=release, metric="askqe", direction=languages[d]))
            == 12
        )
    metaeval = client.get(reverse("scores:metaeval", args=[release.pk]) + "?metric=askqe")
    assert metaeval.status_code == 200 and "τ" in metaeval.content.decode()
    assert client.get(reverse("scores:trend_plot", args=[release.pk]) + "?metric=askqe").status_code == 200
    client.force_login(annotator_de)  # another reader sees only the directions of their languages
    page = client.get(reverse("scores:release", args=[release.pk])).content.decode()
    assert (
        "CEF judge reliability" in page and "en-zh" not in page.split("CEF judge reliability")[1].split("</section>")[0]
    )


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_start_form_sends_the_judge_endpoint_model_and_budget_to_the_judge_queue(
    client, broker, release, languages, admin_user, settings
):
    import base64

    import redis as redis_lib

    from scoring.queues import JUDGE_QUEUE

    r = redis_lib.Redis.from_url(broker)
    client.force_login(admin_user)
    url = reverse("scores:start", args=[release.pk])
    response = client.post(url, {"metric": ["gemba-mqm"], "judge_max_usd": "lots"}, follow=True)
    assert "not a number" in response.content.decode() and not ScoringJob.objects.filter(metric="gemba-mqm").exists()
    settings.LLM_ALLOW_CUSTOM_URL = False  # a typed judge URL is refused unless the operator allows typed URLs (#36.1)
    response = client.post(
        url, {"metric": ["gemba-mqm"], "judge_url": "http://169.254.169.254/v1", "judge_model": "m"}, follow=True
    )
    assert "not a configured endpoint" in response.content.decode()
    assert not ScoringJob.objects.filter(metric="gemba-mqm").exists()
    settings.LLM_ALLOW_CUSTOM_URL = True
    client.post(
        url, {"metric": ["gemba-mqm"], "judge_url": "http://judge:8000/v1", "judge_model": "m", "judge_max_usd": "2.5"}
    )
    jobs = {selectors.task_id_for(j): j for j in ScoringJob.objects.filter(release=release, metric="gemba-mqm")}
    assert len(jobs) == 2
    found = []
    for raw in r.lrange(JUDGE_QUEUE, 0, -1):
        message = json.loads(raw)
        if message["headers"]["id"] in jobs:
            args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
            found.append(kwargs["options"])
            r.lrem(JUDGE_QUEUE, 1, raw)  # no judge worker should score a test release later
    assert found == [{"judge": {"base_url": "http://judge:8000/v1", "model": "m", "max_usd": 2.5}}] * 2


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_start_form_sends_a_metric_option_to_that_metric_only(client, broker, release, languages, admin_user):
    client.force_login(admin_user)
    page = client.get(reverse("scores:release", args=[release.pk])).content.decode()
    assert 'name="option:COMET-22:encode_once"' in page  # offered where the registry declares it
    assert 'name="option:xCOMET-XL:encode_once"' not in page and 'name="option:chrF++:encode_once"' not in page
    # chrF++ has no such option: a forged field for it is dropped, not sent to its worker
    client.post(
        reverse("scores:start", args=[release.pk]),
        {"metric": ["COMET-22", "chrF++"], "option:COMET-22:encode_once": "1", "option:chrF++:encode_once": "1"},
    )
    jobs = {selectors.task_id_for(j): j.metric for j in ScoringJob.objects.filter(release=release)}
    assert sorted(set(jobs.values())) == ["COMET-22", "chrF++"]
    sent = _sent_task_options(broker, jobs)
    for metric, options in sent:
        assert options == ({"extra": {"encode_once": True}} if metric == "COMET-22" else {}), (metric, options)


def _sent_task_options(broker: str, jobs: dict[str, str]) -> list[tuple[str, dict]]:
    """(metric, options) of each scoring task sent for ``jobs`` (task id -> metric), taken off the queues so that no
    worker scores a test release later."""
    import base64

    import redis as redis_lib

    from scoring.queues import queue_for

    r = redis_lib.Redis.from_url(broker)
    sent = {}
    for queue in {queue_for(metric) for metric in jobs.values()}:
        for raw in r.lrange(queue, 0, -1):
            message = json.loads(raw)
            if message["headers"]["id"] in jobs:
                _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
                sent[message["headers"]["id"]] = (kwargs["metric"], kwargs["options"])
                r.lrem(queue, 1, raw)
    assert len(sent) == len(jobs), (sent, jobs)
    return sorted(sent.values(), key=lambda item: item[0])


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_score_command_sends_each_option_to_the_metrics_that_take_it(broker, release, languages):
    from django.core.management import CommandError, call_command

    ref = f"{release.project.name}@{release.version}"
    # a plain KEY=VALUE goes to the metrics of the request that take it (xCOMET-XL would refuse encode_once)
    call_command(
        "score",
        ref,
        "--metrics",
        "COMET-22,xCOMET-XL,chrF++",
        "--option",
        "encode_once=true",
        "--no-wait",
        "--directions",
        "en-de",
        stdout=open(os.devnull, "w"),
    )
    jobs = {selectors.task_id_for(j): j.metric for j in ScoringJob.objects.filter(release=release)}
    assert _sent_task_options(broker, jobs) == [
        ("COMET-22", {"extra": {"encode_once": True}}),
        ("chrF++", {}),
        ("xCOMET-XL", {}),
    ]
    # METRIC:KEY=VALUE goes to that metric alone; BERTScore's num_layers to BERTScore only
    call_command(
        "score",
        ref,
        "--metrics",
        "COMET-22,BERTScore",
        "--option",
        "COMET-22:encode_once=false",
        "--option",
        "num_layers=9",
        "--no-wait",
        "--force",
        "--directions",
        "en-de",
        stdout=open(os.devnull, "w"),
    )
    jobs = {
        selectors.task_id_for(j): j.metric
        for j in ScoringJob.objects.filter(release=release, metric__in=["COMET-22", "BERTScore"])
    }
    assert _sent_task_options(broker, jobs) == [
        ("BERTScore", {"extra": {"num_layers": 9}}),
        ("COMET-22", {"extra": {"encode_once": False}}),
    ]
    # an option no metric of the request takes (a typo) is refused before any job is recorded or sent
    before = ScoringJob.objects.count()
    for option, error in (
        ("encode_onse=true", "no metric of this run takes it"),
        ("xCOMET-XL:encode_once=true", "xCOMET-XL does not take 'encode_once'"),
        ("BLEURT-20:max_length=256", "'BLEURT-20' is not a metric of this run"),
    ):
        with pytest.raises(CommandError, match=error) as raised:
            call_command(
                "score",
                ref,
                "--metrics",
                "COMET-22,xCOMET-XL,chrF++",
                "--option",
                option,
                "--no-wait",
                "--force",
                stdout=open(os.devnull, "w"),
            )
        assert "COMET-22: encode_once" in str(raised.value) or "not a metric of this run" in str(raised.value)
    assert ScoringJob.objects.count() == before


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_judge_job_progress_shows_requests_and_cost_so_far(
    judge_worker, release, languages, tmp_path, client, admin_user
):
    from scoring.judges.stub import JudgeStubServer

    with JudgeStubServer(latency=0.3) as stub:
        tasks.start_scoring(
            release=release,
            metrics=["gemba-mqm"],
            directions=["en-de"],
            options={"judge": {"base_url": stub.base_url, "model": "stub-judge", "concurrency": 1}, "limit": 12},
        )
        seen = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            [state] = services.jobs_sync(release=release, app=current_app)
            if state.sent:
                seen.append((state.sent, state.cost_usd))
            if state.job.status in ("done", "failed"):
                break
            time.sleep(0.2)
    assert state.job.status == "done", state.job.error + (tmp_path / "judge-worker.log").read_text()[-2000:]
    assert seen and 0 < seen[0][0] < 12 and seen[0][1] == 0.0  # mid-run; a local model has no price
    assert [s for s, _ in seen] == sorted(s for s, _ in seen)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-size", "0"], "argument --batch-size: must be at least 1, got 0"),
        (["--batch-size", "-64"], "argument --batch-size: must be at least 1, got -64"),
        (["--limit", "0"], "argument --limit: must be at least 1, got 0"),
        (["--limit", "ten"], "argument --limit: 'ten' is not a whole number"),
        (["--timeout", "-1"], "argument --timeout: must be 0 or more, got -1"),
        (["--max-usd", "0"], "argument --max-usd: must be more than 0, got 0"),
        (["--max-usd", "-2"], "argument --max-usd: must be more than 0, got -2"),
        (["--max-usd", "inf"], "argument --max-usd: must be a finite number, got inf"),
        (["--directions", ",,"], "--directions ',,': name at least one"),
        (["--option", "=1"], "--option '=1': expected KEY=VALUE"),
    ],
)
def test_score_command_refuses_bad_numbers_and_lists_and_records_no_job(release, languages, args, message):
    """Checked before the broker is reached: no job recorded (a batch size of -64 used to reach the workers,
    0 was dropped silently)."""
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=message):
        call_command("score", "demo@t1", "--metrics", "chrF", "--no-wait", *args, stdout=open(os.devnull, "w"))
    assert not ScoringJob.objects.exists()


@pytest.mark.parametrize(("command", "extra"), [("score", ["--no-wait"]), ("metaeval", [])])
@pytest.mark.parametrize(
    ("text", "message"),
    [("²", "release '²' not found"), ("99999999999999999999999", "not found"), ("demo", "give PROJECT@VERSION")],
)
def test_release_argument_that_names_no_release(release, command, extra, text, message):
    """A Unicode digit ('²' passes str.isdigit) or an id no bigint holds names no release (was a traceback)."""
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=message):
        call_command(command, text, "--metrics", "chrF", *extra, stdout=open(os.devnull, "w"))


def test_metaeval_command_needs_a_metric_name(release):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--metrics ' , ': name at least one"):  # printed nothing and exited 0
        call_command("metaeval", "demo@t1", "--metrics", " , ", stdout=open(os.devnull, "w"))


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_a_metric_or_direction_named_twice_is_one_job(broker, release, languages):
    """chrF,chrf with en-de,en-de was reported as "4 job(s)" (the one job listed four times)."""
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("score", "demo@t1", "--metrics", "chrF,chrf", "--directions", "en-de,en-de", "--no-wait", stdout=out)
    assert out.getvalue() == "1 job(s) for demo@t1\n"
    jobs = {selectors.task_id_for(j): j.metric for j in ScoringJob.objects.filter(release=release)}
    assert _sent_task_options(broker, jobs) == [("chrF", {})]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judge-option", "concurrency=-1"], "judge option concurrency=-1: a number at least 1"),
        (["--judge-option", "concurrency=2.5"], "judge option concurrency=2.5: a whole number of at least 1"),
        (["--judge-option", "temperature=hot"], "judge option temperature='hot': a number at least 0"),
        (["--judge-option", "backend=tgi"], "judge option backend='tgi': one of openai, vllm"),
        (["--judge-option", "structured=maybe"], "judge option structured='maybe': true or false"),
        (["--judge-url", "judge.lab:8000/v1"], "judge option base_url='judge.lab:8000/v1': an http:// or https:// URL"),
        (["--judge-option", "temprature=0.2"], "unknown judge option.s. temprature"),
    ],
)
def test_score_command_refuses_bad_judge_settings_and_records_no_job(broker, release, languages, args, message):
    """Checked where the run is asked for (they used to fail each judge task on its worker): nothing recorded or sent."""
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=message):
        call_command(
            "score",
            "demo@t1",
            "--metrics",
            "gemba-mqm",
            "--judge-model",
            "m",
            "--no-wait",
            *args,
            stdout=open(os.devnull, "w"),
        )
    import redis as redis_lib

    from scoring.queues import JUDGE_QUEUE

    assert not ScoringJob.objects.exists() and redis_lib.Redis.from_url(broker).llen(JUDGE_QUEUE) == 0


def test_scores_form_says_no_worker_before_anything_is_ticked_and_keeps_the_ticks(
    client, release, admin_user, settings
):
    """#37.7: the warning and how to start a worker show on the page itself; a refused Queue gives the form
    back with the metrics still ticked, each checkbox inside its label."""
    from xqmeval.celery import app

    client.force_login(admin_user)
    url = reverse("scores:release", args=[release.pk])
    old = app.conf.broker_url
    try:
        settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/4"  # a broker configured: no warning
        assert 'id="no-worker"' not in client.get(url).content.decode()
        settings.CELERY_BROKER_URL = ""
        app.conf.broker_url = None
        page = client.get(url).content.decode()
        assert 'id="no-worker"' in page and "this process scores the string metrics" in page
        assert page.index('id="no-worker"') < page.index('name="metric"')  # said before the first checkbox
        assert 'value="COMET-22"' not in page  # not offered: it needs a worker (#46.1)
        # asked anyway (a form from before): refused, naming the metric, with the ticks kept
        response = client.post(reverse("scores:start", args=[release.pk]), {"metric": ["chrF++", "BLEU", "COMET-22"]})
    finally:
        app.conf.broker_url = old
    page = response.content.decode()
    assert response.status_code == 200 and "COMET-22: without a broker" in page and "set CELERY_BROKER_URL" in page
    assert re.search(
        r'<label class="metric-choice"><input type="checkbox" name="metric" value="chrF\+\+" checked>', page
    )
    assert re.search(r'<label class="metric-choice"><input type="checkbox" name="metric" value="BLEU" checked>', page)
    assert re.search(r'value="TER">', page)  # not ticked
    assert not ScoringJob.objects.exists()
