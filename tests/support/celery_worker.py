"""A real Celery worker in another process, as the tests that need one start it: the platform's (``xqmeval``)
or a scoring worker's (``scoring.worker``, from ``.venv-scoring``), on the queues named, with the solo pool
and none of the chatter between workers (gossip, mingle, heartbeat) a single test worker has no use for.
Its output goes to a log file the test reads; it is stopped with its whole process group at the end."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import REPO, stop_process_group


def celery_worker_argv(*, app: str, queues: str, name: str, python: str | Path = sys.executable) -> list[str]:
    """The command line of a worker of ``app`` consuming ``queues`` (comma-separated), named ``name-PID@host``."""
    return [
        str(python),
        "-m",
        "celery",
        "-A",
        app,
        "worker",
        "-Q",
        queues,
        "--pool",
        "solo",
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "-n",
        f"{name}-{os.getpid()}@%h",
        "--loglevel",
        "INFO",
    ]


@contextmanager
def celery_worker(
    env: dict,
    log: Path,
    *,
    app: str = "xqmeval",
    queues: str = "default",
    name: str,
    python: str | Path = sys.executable,
) -> Iterator[subprocess.Popen]:
    """``with celery_worker(env, log, queues="llm", name="llm") as proc: …``: the worker runs in the block."""
    with open(log, "w") as out:
        proc = subprocess.Popen(
            celery_worker_argv(app=app, queues=queues, name=name, python=python),
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            yield proc
        finally:
            stop_process_group(proc)
