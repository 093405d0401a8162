"""A real Celery worker (Redis broker and result backend) stages a release as a chord: one task per
direction, then the task that hashes, draws the pseudo systems and moves the release into place; the
files are those of the same release written by the command in one process."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from exports.release.domain.release_files import sha256_file, verify_release
from tests.conftest import REPO
from tests.support.asserts import every
from tests.support.celery_worker import celery_worker
from tests.support.worker_database import WorkerDatabase, manage

pytestmark = [pytest.mark.redis, pytest.mark.slow]

PLAN = {
    "n": 1,
    "monolingual_levels": [0],
    "monolingual_repetitions": 2,
    "multilingual_systems": 1,
    "multilingual_repetitions": 2,
}
SETUP = f"""
from core.models import Project
project = Project.objects.get(name="demo")
project.options = {{"sampling": {PLAN!r}}}
project.save()
"""
QUEUE = """
from core.models import Project
from exports.release.tasks import start_release
from django.db import transaction
with transaction.atomic():
    start_release(project=Project.objects.get(name="demo"), version="1.0.0", formats=["jsonl"])
print("queued")
"""


def _run(env, *args):
    proc = manage(env, *args)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    return out


def test_a_worker_releases_one_task_per_direction(tmp_path, redis_url):
    import redis

    db = WorkerDatabase(tmp_path, suffix="release_chord", demo=True)  # project demo: gold pairs in two directions
    releases = tmp_path / "releases"  # one machine here; on several, a shared file system (staging is in it)
    env = {
        **os.environ,
        "DATABASE_URL": db.url,
        "PYTHONPATH": str(REPO),
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": redis_url,
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
        "RELEASES_DIR": str(releases),
    }
    redis.Redis.from_url(redis_url).delete("default")  # no task left over from another test's worker
    try:
        _run(env, "shell", "-c", SETUP)
        _run(env, "build_benchmark", "demo")
        directions = [
            code
            for (code,) in db.rows(
                "select distinct d.code from core_goldsegment g join core_direction d on d.id = g.direction_id order by 1"
            )
        ]
        assert len(directions) >= 2, directions
        with celery_worker(env, tmp_path / "worker.log", queues="default", name="release"):
            assert "queued" in _run(env, "shell", "-c", QUEUE)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and db.rows("select status from exports_release") not in (
                [("ready",)],
                [("failed",)],
            ):
                time.sleep(0.3)
            text = (tmp_path / "worker.log").read_text()
            [(status, error, content_hash, path, per_direction)] = db.rows(
                "select status, error, content_hash, path, directions from exports_release"
            ) or [(None,) * 5]
            assert status == "ready", (error, text[-3000:])
            per_direction = per_direction if isinstance(per_direction, dict) else json.loads(per_direction)
            assert sorted(per_direction) == directions and every(e["status"] == "done" for e in per_direction.values())
            assert text.count("Task exports.release_direction[") >= 2 * len(
                directions
            )  # received and succeeded, one per direction
            assert "Task exports.finish_release[" in text
            out = Path(path)
            assert out == releases / "demo" / "1.0.0" and verify_release(out) == []
            assert not (releases / "demo" / ".1.0.0.staging").exists()

            # the same release written by the command in one process: same content hash, same data files
            again = tmp_path / "in-process"
            _run(env, "release", "demo", "--version", "2.0.0", "--out", str(again), "--format", "jsonl")
            manifest = json.loads((again / "manifest.json").read_text())
            assert manifest["content_hash"] == content_hash
            data = [
                p.relative_to(out)
                for p in sorted(out.rglob("*"))
                if p.is_file() and p.name not in ("README.md", "manifest.json")
            ]
            assert len(data) == 2 * len(directions) + 4
            assert every(sha256_file(out / p) == sha256_file(again / p) for p in data)
            assert (
                db.count(
                    "select count(*) from exports_pseudosystem ps join exports_release r on r.id = ps.release_id where r.version = '1.0.0'"
                )
                > 0
            )
    finally:
        db.drop()
