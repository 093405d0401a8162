"""The separate processes of a deployment whose workers share nothing with the web app but Redis and HTTP:
gunicorn and a platform worker (queue ``default``: ``collect_scores``, a release's start and finish) on the
web side, with one data directory, and scoring workers (.venv-scoring) and release workers (the web app's
code, queue ``release``, with no usable database) with their own, knowing the platform only by its URL and
a worker token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import REPO, need, stop_process_group
from tests.support.celery_worker import celery_worker_argv

SCORING_PYTHON = REPO / ".venv-scoring" / "bin" / "python"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def database_url() -> str:
    """The URL of the test database this test runs on (its rows committed: django_db(transaction=True))."""
    from django.db import connection

    d = connection.settings_dict
    return f"postgres://{d['USER'] or 'postgres'}@{d['HOST'] or '127.0.0.1'}:{d['PORT'] or 5432}/{d['NAME']}"


@dataclass
class Processes:
    tmp: Path
    redis: str
    procs: list = field(default_factory=list)
    logs: dict = field(default_factory=dict)

    def _start(self, name: str, argv: list[str], env: dict) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "a")
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append((proc, log))
        self.logs[name] = self.tmp / f"{name}.log"
        return proc

    web_extra: dict = field(default_factory=dict)  # settings of the web side (gunicorn and its worker)

    def web_env(self, data: Path) -> dict:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("DJANGO_ALLOW_ASYNC_UNSAFE", "PYTEST_XDIST_WORKER", "XQMEVAL_TEST_WORKER")
        }
        env.update(
            DJANGO_SETTINGS_MODULE="xqmeval.settings",
            DATABASE_URL=database_url(),
            XQMEVAL_DATA_DIR=str(data),
            CELERY_BROKER_URL=self.redis,
            CELERY_RESULT_BACKEND=self.redis,
            ALLOWED_HOSTS="127.0.0.1",
            PYTHONPATH=str(REPO),
            TMPDIR=str(data / "tmp"),  # where an upload is spooled while it is checked
            **self.web_extra,
        )
        (data / "tmp").mkdir(parents=True, exist_ok=True)
        return env

    def web(self, data: Path) -> str:
        """gunicorn on a free port; its base URL once it answers."""
        port = free_port()
        self._start(
            "gunicorn",
            [
                sys.executable,
                "-m",
                "gunicorn",
                "xqmeval.wsgi",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                "2",
                "--timeout",
                "120",
            ],
            self.web_env(data),
        )
        base = f"http://127.0.0.1:{port}"
        import httpx

        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code < 500:
                    return base
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"gunicorn did not start: {self.logs['gunicorn'].read_text()[-3000:]}")
            time.sleep(0.3)

    def platform_worker(self, data: Path) -> subprocess.Popen:
        return self._start(
            "platform-worker",
            celery_worker_argv(app="xqmeval", queues="default", name="platform"),
            self.web_env(data),
        )

    def scoring_worker(
        self,
        name: str,
        *,
        queues: str,
        platform_url: str | None,
        data: Path | None,
        token: str = "",
        env: dict | None = None,
        app: str = "scoring.worker",
    ) -> subprocess.Popen:
        need(
            SCORING_PYTHON.exists(), f"the scoring virtualenv at {SCORING_PYTHON.parent.parent} (bin/setup-env scoring)"
        )
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "HF_HOME", "TRANSFORMERS_CACHE", "TMPDIR")
        wenv = {k: v for k, v in os.environ.items() if k in keep}  # nothing of the web app's configuration
        wenv.update(
            CELERY_BROKER_URL=self.redis,
            CELERY_RESULT_BACKEND=self.redis,
            PYTHONPATH=str(REPO),
            HF_HUB_OFFLINE="1",
            OPENAI_API_KEY="test-key",
        )
        wenv.update(env or {})  # a test's own settings win (HF_HUB_OFFLINE=0 for a worker that reads the Hub)
        argv = celery_worker_argv(app=app, queues=queues, name=name, python=SCORING_PYTHON)
        if platform_url:
            wenv["XQMEVAL_WORKER_TOKEN"] = token
            argv += ["--platform-url", platform_url, "--worker-data", str(data)]
        return self._start(name, argv, wenv)

    def release_worker(
        self, name: str, *, platform_url: str, data: Path, token: str, env: dict | None = None
    ) -> subprocess.Popen:
        """A release-direction worker (queue ``release``): the web app's code with a database it cannot reach
        (any query fails) and its own data directory; the platform only by its URL and a worker token."""
        keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")
        wenv = {k: v for k, v in os.environ.items() if k in keep}  # nothing of the web app's configuration
        wenv.update(
            DJANGO_SETTINGS_MODULE="xqmeval.settings",
            DATABASE_URL="postgres://no-database@127.0.0.1:9/unreachable",  # port 9: nothing listens
            XQMEVAL_DATA_DIR=str(data / "settings-data"),
            CELERY_BROKER_URL=self.redis,
            CELERY_RESULT_BACKEND=self.redis,
            PYTHONPATH=str(REPO),
            XQMEVAL_PLATFORM_URL=platform_url,
            XQMEVAL_WORKER_TOKEN=token,
            XQMEVAL_WORKER_DATA=str(data),
            **(env or {}),
        )
        argv = celery_worker_argv(app="xqmeval", queues="release", name=name)
        return self._start(name, argv, wenv)

    def stop(self, proc) -> None:
        for p, log in list(self.procs):
            if p is proc:
                if p.poll() is None:
                    stop_process_group(p)
                log.close()
                self.procs.remove((p, log))

    def stop_all(self) -> None:
        for p, _ in list(self.procs):
            self.stop(p)

    def tail(self) -> str:
        return "\n".join(f"--- {name}\n{path.read_text()[-2500:]}" for name, path in self.logs.items() if path.exists())


def drop_queued(url: str) -> None:
    import redis

    r = redis.Redis.from_url(url)
    for queue in ("default", "scoring", "judge", "release"):
        r.delete(queue)
