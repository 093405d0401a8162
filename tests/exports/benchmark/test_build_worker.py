"""A real Celery worker (Redis broker and result backend) runs a build as a chord: one task per direction,
then the task that records the counts."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.conftest import REPO
from tests.support.asserts import every
from tests.support.celery_worker import celery_worker
from tests.support.worker_database import WorkerDatabase, manage

pytestmark = [pytest.mark.redis, pytest.mark.slow]

QUEUE = """
from core.models import Project
from exports.benchmark.tasks import start_build
print("build", start_build(project=Project.objects.get(name="demo")).pk)
"""


def test_a_worker_builds_one_task_per_direction(tmp_path, redis_url):
    import redis

    db = WorkerDatabase(tmp_path, suffix="chord", demo=True)  # project demo: gold pairs in two directions
    env = {
        **os.environ,
        "DATABASE_URL": db.url,
        "PYTHONPATH": str(REPO),
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
    }
    redis.Redis.from_url(redis_url).delete("default")  # no task left over from another test's worker
    try:
        directions = [
            code
            for (code,) in db.rows(
                "select distinct d.code from core_goldsegment g join core_direction d on d.id = g.direction_id order by 1"
            )
        ]
        assert len(directions) >= 2, directions
        with celery_worker(env, tmp_path / "worker.log", queues="default", name="build"):
            queued = manage(env, "shell", "-c", QUEUE)
            out, _ = queued.communicate(timeout=120)
            assert queued.returncode == 0 and "build " in out, out
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and db.rows("select status from exports_benchmarkbuild") != [("done",)]:
                time.sleep(0.3)
        text = (tmp_path / "worker.log").read_text()
        [(status, done, total, pseudo, per_direction, counts)] = db.rows(
            "select status, done_segments, total_segments, pseudo_created, directions, counts from exports_benchmarkbuild"
        ) or [(None,) * 6]
        assert status == "done", text[-3000:]
        per_direction = per_direction if isinstance(per_direction, dict) else json.loads(per_direction)
        counts = counts if isinstance(counts, dict) else json.loads(counts)
        assert sorted(per_direction) == directions == sorted(counts)
        assert every(entry["status"] == "done" for entry in per_direction.values())
        assert (
            done
            == total
            == sum(entry["gold_pairs"] for entry in per_direction.values())
            == db.count("select count(*) from core_goldsegment")
        )
        assert (
            pseudo
            == sum(entry["pseudo_created"] for entry in per_direction.values())
            == db.count("select count(*) from exports_pseudotranslation")
            > 0
        )
        assert text.count("Task exports.build_direction[") >= 2 * len(
            directions
        )  # received and succeeded, one per direction
        assert "Task exports.finish_build[" in text
    finally:
        db.drop()
