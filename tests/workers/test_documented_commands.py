"""The worker commands the docs and pages give, run verbatim: taken from docs/operations.md (and the project
page), split as a shell would, started from the repository root with nothing on PYTHONPATH, as an operator
starts them. The other worker tests start ``python -m celery`` with PYTHONPATH set, which hid that the
documented scoring worker failed every job (#46.4: ``No module named 'llm_client'``)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time

import pytest
from celery import current_app

from exports.models import MetricScore, Release
from exports.scores import services, tasks
from scoring.tests.releases import release_rows, write_release
from tests.conftest import REPO, need, stop_process_group
from tests.exports.scores.test_scoring_jobs import broker, drop_collect_callbacks  # noqa: F401  (fixture)
from tests.support.asserts import every

OPERATIONS = REPO / "docs" / "operations.md"
SCORING_COMMAND = re.compile(r"^\.venv-scoring/bin/celery -A scoring\.worker worker -Q scoring -c 1\b.*$", re.M)
PLATFORM_COMMAND = re.compile(r"^\.venv/bin/celery -A xqmeval worker -Q default\b.*$", re.M)


def documented(pattern: re.Pattern) -> list[str]:
    """A command exactly as docs/operations.md prints it at the start of a line (its comment cut off)."""
    found = pattern.findall(OPERATIONS.read_text(encoding="utf-8"))
    assert found, f"{OPERATIONS} prints no line matching {pattern.pattern}"
    return shlex.split(found[0], comments=True)


def documented_scoring_worker() -> list[str]:
    return documented(SCORING_COMMAND)


def test_the_project_page_gives_the_documented_scoring_worker_command():
    from xqmeval.projects.selectors import SCORING_WORKER_COMMAND

    # the page prefixes the broker settings a worker needs; the command itself is the documented one
    assert shlex.split(SCORING_WORKER_COMMAND)[-len(documented_scoring_worker()) :] == documented_scoring_worker()


def wait_done(release, jobs: int, log, timeout: float = 180.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = services.jobs_sync(release=release, app=current_app)
        if len([s for s in states if s.job.status in ("done", "failed")]) >= jobs:
            return states
        time.sleep(0.5)
    raise AssertionError(f"jobs not finished in {timeout}s; worker log: {log.read_text()[-4000:]}")


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pool", ["documented", "threads"])
def test_the_documented_scoring_worker_scores_a_release(broker, project, languages, tmp_path, pool):  # noqa: F811
    argv = documented_scoring_worker()
    need((REPO / argv[0]).exists(), f"the scoring virtualenv ({argv[0]}: bin/setup-env scoring)")
    if pool != "documented":  # "with any pool": the same command with another --pool
        argv = [*argv, "--pool", pool]
    root = write_release(tmp_path / "rel")
    release = Release.objects.create(project=project, version="t1", status=Release.Status.READY, path=str(root))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DJANGO_SETTINGS_MODULE")}
    env.update(CELERY_BROKER_URL=broker, CELERY_RESULT_BACKEND=broker, HF_HUB_OFFLINE="1")
    log = tmp_path / "worker.log"
    drop_collect_callbacks(broker)
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # chrF++ and a judge metric's module both load through the registry, which imports llm_client
        tasks.start_scoring(release=release, metrics=["chrF++", "BLEU"])
        states = wait_done(release, 4, log)
        assert every(s.job.status == "done" for s in states), [(s.job.metric, s.job.error) for s in states]
        n = len(release_rows("en-de"))
        assert MetricScore.objects.filter(release=release).count() == 4 * n
        assert "ModuleNotFoundError" not in log.read_text()
    finally:
        stop_process_group(proc)
        drop_collect_callbacks(broker)


@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_documented_platform_worker_runs_a_task(broker, tmp_path):  # noqa: F811
    from tests.workers.processes import database_url

    argv = documented(PLATFORM_COMMAND)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_XDIST_WORKER", "XQMEVAL_TEST_WORKER")}
    env.update(
        DJANGO_SETTINGS_MODULE="xqmeval.settings",
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=broker,
        CELERY_RESULT_BACKEND=broker,
        XQMEVAL_DATA_DIR=str(tmp_path),
    )
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # a platform task on queue default, answered by that worker: collect_scores of a release that is gone
        result = tasks.collect_scores.apply_async((987654,), queue="default")
        assert result.get(timeout=120) == {"release": 987654, "missing": True}, log.read_text()[-3000:]
    finally:
        stop_process_group(proc)
